"""The root conftest runs the test session with fewer full garbage collections and, once the tests are collected,
what is alive moved out of the collector's sight (the collector took 18% of the test workers' time before:
conftest.py says where it was measured)."""
import gc
import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).resolve().parent.parent / "conftest.py")
conftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conftest)


def test_this_session_collects_in_full_less_often_and_froze_what_collection_left(request):
    assert gc.get_threshold()[2] == conftest.FULL_COLLECTION_THRESHOLD > 10
    assert id(request.node) not in {id(o) for o in gc.get_objects()}  # this test's item, made at collection
    assert gc.isenabled()

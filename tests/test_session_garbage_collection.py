"""The root conftest runs the test session with fewer full garbage collections and, once the tests are collected,
what is alive moved out of the collector's sight (conftest.py says what it cost before, and where it was measured)."""
import gc


def test_this_session_collects_in_full_less_often_and_froze_what_collection_left(request):
    assert gc.get_threshold()[2] > 10  # Python's default third threshold is 10
    assert id(request.node) not in {id(o) for o in gc.get_objects()}  # this test's item, made at collection
    assert gc.isenabled()

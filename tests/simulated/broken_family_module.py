"""A module named as a family in TC_HARNESS_FAMILIES that raises as it is imported (tests/test_environment_errors.py):
the command line names what it raised, in one line."""
raise RuntimeError("this family module cannot be imported\nsecond line")

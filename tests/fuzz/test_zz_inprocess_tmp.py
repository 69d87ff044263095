import test_fuzz_pipeline as t


def test_zz_inprocess_random_programs():
    t.random_programs_have_no_bug()

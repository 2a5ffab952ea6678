"""The four worked examples of the zero-column mask descriptor (PTX ISA 9.7.16.4.3).

The spec writes masks most-significant bit first ('0b ... 111 0000 111 0000'); column 0 is the least
significant bit. `lsb_first` turns the spec's text into the mask's first columns."""
import pytest

from harness.spec import descriptors, zero_mask


def lsb_first(spec_text: str) -> str:
    return spec_text.replace(" ", "")[::-1]


def mask(z, m, n):
    return "".join(map(str, zero_mask.zero_column_mask_bits(z, m, n)))


def test_example_1_non_zero_mask_off_gives_all_zeros():
    z = zero_mask.ZeroColumnMask((0, 0, 0, 0), (0, 0, 0, 0), False, 4, 3, 0)
    assert mask(z, 128, 64) == "0" * 64


def test_example_2_m128():
    z = zero_mask.ZeroColumnMask((0, 0, 0, 0), (0, 0, 0, 0), True, 2, 3, 0)
    assert mask(z, 128, 64).startswith(lsb_first("111 0000 111 0000"))


def test_example_3_m64_two_submasks():
    z = zero_mask.ZeroColumnMask((0, 0, 0, 0), (1, 0, 0, 0), True, 2, 3, 0)
    m = mask(z, 64, 64)
    assert m[:32].startswith(lsb_first("111 0000 111 0000 111"))
    assert m[32:].startswith(lsb_first("0000 111 0000 111 0000"))


def test_example_4_m32_four_submasks_with_start_counts_and_shift():
    z = zero_mask.ZeroColumnMask((0, 1, 2, 1), (1, 1, 0, 0), True, 2, 3, 2)
    m = mask(z, 32, 128)
    q = 32
    assert m[0:q].startswith(lsb_first("0000 111 0000 111"))
    assert m[q:2 * q].startswith(lsb_first("0000 111 0000 11"))
    assert m[2 * q:3 * q].startswith(lsb_first("111 0000 111 00"))
    assert m[3 * q:].startswith(lsb_first("111 0000 111 000"))
    assert z.column_shift == 2  # "B matrix with columns from 2 to 129 will be used" for N = 128


def test_descriptions_of_skip_and_use_span_contradict_the_examples():
    """The field table says Skip Span = (consecutive columns where B is used) - 1 and Use Span = (columns
    where 0s are used) - 1. Read that way, example 2 (skip 2, use 3) would give runs of 3 used columns
    (mask 0) and 4 zeroed columns (mask 1): 0000111... from the MSB side reversed = '0001111'. The worked
    examples instead show runs of four 0s and three 1s, i.e. a 1-run (zeroed) is skip_span + 1 long, which
    also matches the field *names*. The model follows the examples; only a Blackwell run can settle it."""
    z = zero_mask.ZeroColumnMask((0, 0, 0, 0), (0, 0, 0, 0), True, 2, 3, 0)
    as_described = "000" + "1111"  # 3 used (0) columns, then 4 zeroed (1) columns
    assert not mask(z, 128, 64).startswith(as_described)
    assert mask(z, 128, 64).startswith("0000" + "111")


@pytest.mark.parametrize("m,parts", [(128, 1), (64, 2), (32, 4)])
def test_submask_coverage(m, parts):
    z = zero_mask.ZeroColumnMask((0, 0, 0, 0), (1, 0, 1, 0), True, 0, 0, 0)  # alternate 1,0 / 0,1
    bits = zero_mask.zero_column_mask_bits(z, m, 64)
    width = 64 // parts
    for i in range(parts):
        first = [1, 0, 1, 0][i]
        assert bits[i * width] == first and bits[i * width + 1] == 1 - first


def test_encode_decode_round_trip_and_limits():
    z = zero_mask.ZeroColumnMask((1, 2, 3, 255), (1, 0, 1, 1), True, 7, 9, 32)
    v = zero_mask.encode_zero_column_mask(z)
    assert zero_mask.decode_zero_column_mask(v) == z
    assert (v >> 39) & 1 == 1 and (v >> 40) & 0xFF == 7 and (v >> 48) & 0xFF == 9 and (v >> 56) & 0x3F == 32
    with pytest.raises(descriptors.DescriptorError, match="maximum 16 for M = 32"):
        zero_mask.zero_column_mask_bits(zero_mask.ZeroColumnMask(column_shift=20), 32, 64)
    with pytest.raises(descriptors.DescriptorError, match="sc0"):
        zero_mask.encode_zero_column_mask(zero_mask.ZeroColumnMask(start_count=(256, 0, 0, 0)))
    with pytest.raises(descriptors.DescriptorError, match="M = 96"):
        zero_mask.zero_column_mask_bits(zero_mask.ZeroColumnMask(), 96, 64)

"""Host-side constructors name what is wrong: a vector/matrix/transform with the wrong number of
components, and an array shape that is not integers (before: numpy's "cannot reshape array of
size 4 into shape (3,)", or int('x') / "'float' object is not iterable")."""
import numpy as np
import pytest

import kernelcore as kc


@pytest.mark.parametrize("make, want", [
    (lambda: kc.vec3(1.0, 2.0, 3.0, 4.0), r"vec3: expected one value or 3 components, got 4"),
    (lambda: kc.mat33(1.0, 2.0, 3.0), r"mat33: expected one value or 9 components, got 3"),
    (lambda: kc.transform((1.0, 2.0), (0.0, 0.0, 0.0, 1.0)), r"transform: expected one value or 7 components, got 6"),
])
def test_composite_with_the_wrong_component_count_names_the_type(make, want):
    with pytest.raises(ValueError, match=want):
        make()


def test_composites_still_take_one_value_rows_or_all_components():
    np.testing.assert_array_equal(np.asarray(kc.vec3(2.0)), [2.0, 2.0, 2.0])
    m = kc.mat33(kc.vec3(1.0, 2.0, 3.0), kc.vec3(4.0, 5.0, 6.0), kc.vec3(7.0, 8.0, 9.0))
    np.testing.assert_array_equal(np.asarray(m), np.arange(1.0, 10.0).reshape(3, 3))
    np.testing.assert_array_equal(np.asarray(kc.transform((1.0, 2.0, 3.0), (0.0, 0.0, 0.0, 1.0))),
                                  [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("shape", [2.5, "x", (2, "3"), (2, None), (True,)])
def test_array_shape_that_is_not_integers_is_a_type_error(shape):
    with pytest.raises(TypeError, match=r"array shape must be an int or a tuple of ints, got"):
        kc.zeros(shape, dtype=float)


def test_array_shapes_of_whole_numbers_still_work():
    assert kc.zeros(np.int64(3), dtype=float).shape == (3,)
    assert kc.zeros([2, np.int32(3)], dtype=float).shape == (2, 3)
    assert kc.zeros(np.array([4, 1]), dtype=float).shape == (4, 1)
    assert kc.zeros((2.0,), dtype=float).shape == (2,)

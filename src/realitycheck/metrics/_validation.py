"""Argument checks shared by every metric, and the warning for undefined values.

Every check runs before any work and raises :class:`~realitycheck.errors.InvalidInputError`
with the one message shape of :func:`realitycheck.params.param_error`: "The 'y_true'
parameter of auroc must be ... Got ... instead." Scalar options are checked with
:func:`realitycheck.params.check_arg` and its constraints.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from realitycheck.params import param_error

__all__ = [
    "UndefinedMetricWarning",
    "check_binary",
    "check_numbers",
    "check_same_length",
    "check_scores",
    "warn_undefined",
]


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined on the given input (one class only, a zero division).

    The metric returns NaN and emits this warning instead of raising, so that a
    loop over many slices or resamples does not stop on one degenerate case.
    """


def warn_undefined(message: str) -> None:
    """Emit an :class:`UndefinedMetricWarning` pointing at the caller of the metric."""
    warnings.warn(message, UndefinedMetricWarning, stacklevel=3)


def _as_array(value: Any, name: str, func: str) -> npt.NDArray[Any]:
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise param_error(
            name, func, "an array-like of numbers", got=f"{type(value).__name__} ({error})"
        ) from None
    if array.dtype == np.bool_:
        return array
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise param_error(
            name, func, "an array-like of real numbers", got=f"an array of dtype {array.dtype}"
        )
    return array


def _check_shape(array: npt.NDArray[Any], name: str, func: str, ndim: tuple[int, ...]) -> None:
    if array.ndim not in ndim:
        wanted = " or ".join(f"{d}-D" for d in ndim)
        raise param_error(name, func, f"a {wanted} array", got=f"an array of shape {array.shape}")
    if array.size == 0:
        raise param_error(
            name, func, "a non-empty array", got=f"an empty array of shape {array.shape}"
        )


def check_numbers(
    value: Any, name: str, func: str, *, ndim: tuple[int, ...] = (1,)
) -> npt.NDArray[np.float64]:
    """Return ``value`` as a float array of finite numbers, or raise.

    Args:
        value: The argument to check.
        name: The parameter name, for the message.
        func: The public function name, for the message.
        ndim: The accepted numbers of dimensions.

    Returns:
        A float64 array of the accepted shape with no NaN or infinity.

    Raises:
        InvalidInputError: Wrong type, shape, empty, or a NaN / infinite value.
    """
    array = _as_array(value, name, func)
    _check_shape(array, name, func, ndim)
    floats = array.astype(np.float64)
    finite = np.isfinite(floats)
    if not finite.all():
        n_nan = int(np.isnan(floats).sum())
        n_inf = int((~finite).sum()) - n_nan
        raise param_error(
            name, func, "an array of finite numbers", got=f"{n_nan} NaN and {n_inf} infinite values"
        )
    return floats


def _lossless(array: npt.NDArray[Any], floats: npt.NDArray[np.float64]) -> bool:
    """Whether every value of ``array`` is exactly its float64 cast in ``floats``."""
    if array.dtype.kind == "b" or array.dtype == np.float64:
        return True
    if array.dtype.kind in "iu":
        # Integers up to 2**53 in magnitude are exact; check the larger ones one by one.
        big = np.abs(floats) >= 2.0**53
        return all(
            int(f) == v for f, v in zip(floats[big].tolist(), array[big].tolist(), strict=True)
        )
    return bool((floats.astype(array.dtype) == array).all())


def check_scores(
    value: Any, name: str, func: str, *, ndim: tuple[int, ...] = (1,)
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
    """Return scores whose order is exactly the order of ``value``, for rank-based metrics.

    Scores are cast to float64 when no value loses precision. Integers beyond
    2**53 (or long doubles) that would round, and so could tie where they
    differ (``2**53 + 1`` and ``2**53``), are replaced by their exact dense
    ranks 0, 1, 2... over the whole array instead, which every rank-based
    metric treats the same as the values.

    Args:
        value: The scores.
        name: The parameter name, for the message.
        func: The public function name, for the message.
        ndim: The accepted numbers of dimensions.

    Returns:
        ``(scores, values)``: ``values`` is ``None`` when ``scores`` are the
        float64 values themselves; otherwise ``scores`` are ranks and
        ``values[k]`` is the float64 nearest to the value of rank ``k`` (to
        report a threshold in the scores' units).

    Raises:
        InvalidInputError: Wrong type, shape, empty, or a NaN / infinite value.
    """
    floats = check_numbers(value, name, func, ndim=ndim)
    array = np.asarray(value)
    if _lossless(array, floats):
        return floats, None
    distinct, ranks = np.unique(array, return_inverse=True)
    return ranks.reshape(array.shape).astype(np.float64), distinct.astype(np.float64)


def check_binary(value: Any, name: str, func: str) -> npt.NDArray[np.bool_]:
    """Return ``value`` as a 1-D bool array (True = hallucinated), or raise.

    Args:
        value: 0/1 numbers or booleans.
        name: The parameter name, for the message.
        func: The public function name, for the message.

    Returns:
        A 1-D bool array.

    Raises:
        InvalidInputError: Wrong type, shape, empty, or a value other than 0 and 1.
    """
    array = _as_array(value, name, func)
    _check_shape(array, name, func, (1,))
    if array.dtype == np.bool_:
        return array
    with np.errstate(invalid="ignore"):
        bad = (array != 0) & (array != 1)
    if bad.any():
        shown = np.unique(array[bad])[:5].tolist()
        raise param_error(
            name,
            func,
            "an array of 0/1 or bool labels (1 = hallucinated)",
            got=f"other values {shown}",
        )
    return array == 1


def check_same_length(
    reference: npt.NDArray[Any],
    reference_name: str,
    other: npt.NDArray[Any],
    other_name: str,
    func: str,
) -> None:
    """Raise unless ``other``'s last axis has the length of ``reference``.

    Args:
        reference: The 1-D array whose length is the expected one.
        reference_name: Its parameter name.
        other: The array to compare (1-D, or 2-D with items on the last axis).
        other_name: Its parameter name.
        func: The public function name, for the message.

    Raises:
        InvalidInputError: The lengths differ.
    """
    if other.shape[-1] != reference.shape[0]:
        raise param_error(
            other_name,
            func,
            f"an array with one value per item of {reference_name!r} ({reference.shape[0]})",
            got=str(other.shape[-1]),
        )

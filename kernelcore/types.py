"""Kernel value types: scalars, vectors, matrices, quaternions, transforms and structs.

Every type is a Python class carrying what the compiler needs (its C++ name, its ctypes
layout for launch packing, its numpy dtype for storage).  Instances are host-side values
usable in Python scope and as launch arguments.  Quaternions are stored (x, y, z, w),
matrices are row-major, ``float`` in a kernel is float32 and ``int`` is int32.
"""
from __future__ import annotations

import ctypes
import hashlib
import builtins as _py

import numpy as np

from . import hooks

# ---------------------------------------------------------------------------------------
# scalars


class _TypeMeta(type):
    def __repr__(cls):
        return getattr(cls, "_name", cls.__name__)


class scalar_base(metaclass=_TypeMeta):
    """Base of scalar types; an instance wraps one typed host value."""

    _kind = "scalar"
    _length = 1
    _shape = ()

    def __init__(self, value=0):
        self.value = self._np(value).item() if not isinstance(value, scalar_base) else self._np(value.value).item()

    def __repr__(self):
        return f"{self._name}({self.value})"

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __eq__(self, other):
        return self.value == (other.value if isinstance(other, scalar_base) else other)

    def __hash__(self):
        return hash(self.value)


def _scalar(name, np_type, ct, cname, is_float=False, is_int=False, signed=True):
    cls = _TypeMeta(name, (scalar_base,), {
        "_name": name, "_np": np_type, "_ctypes": ct, "_ctype": cname,
        "_is_float": is_float, "_is_int": is_int, "_signed": signed,
        "_size": np.dtype(np_type).itemsize,
    })
    return cls


class _half_ctype(ctypes.Structure):
    _fields_ = [("bits", ctypes.c_uint16)]


bool_ = _scalar("bool", np.bool_, ctypes.c_bool, "bool")
int8 = _scalar("int8", np.int8, ctypes.c_int8, "kc::int8", is_int=True)
int16 = _scalar("int16", np.int16, ctypes.c_int16, "kc::int16", is_int=True)
int32 = _scalar("int32", np.int32, ctypes.c_int32, "kc::int32", is_int=True)
int64 = _scalar("int64", np.int64, ctypes.c_int64, "kc::int64", is_int=True)
uint8 = _scalar("uint8", np.uint8, ctypes.c_uint8, "kc::uint8", is_int=True, signed=False)
uint16 = _scalar("uint16", np.uint16, ctypes.c_uint16, "kc::uint16", is_int=True, signed=False)
uint32 = _scalar("uint32", np.uint32, ctypes.c_uint32, "kc::uint32", is_int=True, signed=False)
uint64 = _scalar("uint64", np.uint64, ctypes.c_uint64, "kc::uint64", is_int=True, signed=False)
float16 = _scalar("float16", np.float16, _half_ctype, "kc::half", is_float=True)
float32 = _scalar("float32", np.float32, ctypes.c_float, "kc::float32", is_float=True)
float64 = _scalar("float64", np.float64, ctypes.c_double, "kc::float64", is_float=True)

scalar_types = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64)
float_types = (float16, float32, float64)
int_types = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)

_np_to_scalar = {np.dtype(t._np): t for t in scalar_types}


def is_scalar(t) -> bool:
    return isinstance(t, type) and issubclass(t, scalar_base)


def is_float(t) -> bool:
    return is_scalar(t) and t._is_float


def is_int(t) -> bool:
    return is_scalar(t) and t._is_int


# ---------------------------------------------------------------------------------------
# vectors, matrices, quaternions, transforms


class _CompositeValue(metaclass=_TypeMeta):
    """Host value of a fixed-size composite type, backed by a small numpy array."""

    _kind = "composite"

    def __init__(self, *args):
        shape, dt = self._shape, self._dtype._np
        if len(args) == 0:
            v = np.zeros(shape, dtype=dt)
        elif len(args) == 1 and np.ndim(args[0]) == 0:
            v = np.full(shape, _scalar_value(args[0]), dtype=dt)
        else:
            flat = _flatten_args(args[0] if len(args) == 1 else args)
            try:
                v = np.asarray(flat, dtype=dt)
            except (TypeError, ValueError):
                raise TypeError(f"{type_repr(type(self))}: components must be numbers, got {args!r}") from None
            if v.size != int(np.prod(shape)):
                raise ValueError(f"{type_repr(type(self))}: expected one value or {int(np.prod(shape))} components, "
                                 f"got {v.size}: {args!r}")
            v = v.reshape(shape)
        self._v = v

    # numpy-like behaviour in Python scope
    def __array__(self, dtype=None, copy=None):
        return self._v if dtype is None else self._v.astype(dtype)

    def __len__(self):
        return self._shape[0]

    def __getitem__(self, i):
        r = self._v[i]
        return r.item() if np.ndim(r) == 0 else r

    def __setitem__(self, i, value):
        self._v[i] = value

    def __iter__(self):
        return iter(self._v.tolist())

    def __repr__(self):
        return f"{self._name}({', '.join(repr(x) for x in self._v.ravel().tolist())})"

    def __eq__(self, other):
        return bool(np.array_equal(self._v, np.asarray(other)))

    def __hash__(self):
        return hash(self._v.tobytes())

    def _wrap(self, v):
        return type(self)(v) if np.shape(v) == self._shape else v

    def __add__(self, o): return self._wrap(self._v + np.asarray(o))
    def __radd__(self, o): return self._wrap(np.asarray(o) + self._v)
    def __sub__(self, o): return self._wrap(self._v - np.asarray(o))
    def __rsub__(self, o): return self._wrap(np.asarray(o) - self._v)
    def __mul__(self, o):
        # products with a matrix, quaternion or transform mean what they mean in kernels
        # (matrix product, Hamilton product, composition): run the kernel's own "mul"
        # (vector * vector stays component-wise here; kernels reject it as ambiguous)
        if isinstance(o, _CompositeValue) and not (self._kind == "vector" and o._kind == "vector"):
            return _native_mul(self, o)
        return self._wrap(self._v * np.asarray(o))

    def __rmul__(self, o): return self._wrap(np.asarray(o) * self._v)

    def __matmul__(self, o):
        if not isinstance(o, _CompositeValue):
            return NotImplemented
        return _native_mul(self, o)
    def __truediv__(self, o): return self._wrap(self._v / np.asarray(o))
    def __neg__(self): return self._wrap(-self._v)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        idx = "xyzw".find(name) if len(name) == 1 else -1
        if idx >= 0 and self._kind in ("vector", "quat") and idx < self._shape[0]:
            return self._v[idx].item()
        if self._kind == "transform" and name in ("p", "q"):   # translation and rotation, as in kernels
            return vector(3, self._dtype)(self._v[:3]) if name == "p" else quaternion(self._dtype)(self._v[3:])
        raise AttributeError(name)


def _native_mul(a, b):
    """a * b (or a @ b) on host values, computed by the kernel builtin (kernelcore.host_call)."""
    return hooks.call_builtin("mul", (a, b))


def _scalar_value(x):
    return x.value if isinstance(x, scalar_base) else x


def _flatten_args(a):
    if isinstance(a, _CompositeValue):
        return a._v.ravel().tolist()
    if isinstance(a, (list, tuple)):
        out = []
        for x in a:
            out.extend(_flatten_args(x) if (isinstance(x, (list, tuple, _CompositeValue)) or np.ndim(x) > 0) else [_scalar_value(x)])
        return out
    return np.asarray(a).ravel().tolist()


_composite_cache: dict = {}


def _composite(kind, shape, dtype, name, cname):
    key = (kind, shape, dtype)
    cls = _composite_cache.get(key)
    if cls is None:
        n = int(np.prod(shape))
        cls = _TypeMeta(name, (_CompositeValue,), {
            "_name": name, "_kind": kind, "_shape": tuple(shape), "_dtype": dtype,
            "_length": shape[0], "_ctype": cname, "_size": n * dtype._size,
            "_ctypes": dtype._ctypes * n,
        })
        _composite_cache[key] = cls
    return cls


def _check_dtype(dtype):
    dtype = type_from_annotation(dtype)
    if not is_scalar(dtype) or dtype is bool_:
        raise TypeError(f"composite types need a numeric scalar dtype, got {dtype!r}")
    return dtype


def vector(length: int, dtype=float) -> type:
    """A fixed-length vector type, e.g. ``vector(3, float32)`` is ``vec3``."""
    dtype = _check_dtype(dtype)
    return _composite("vector", (int(length),), dtype, f"vec{length}{_suffix(dtype)}", f"kc::vec_t<{length},{dtype._ctype}>")


def matrix(shape, dtype=float) -> type:
    """A row-major matrix type, e.g. ``matrix((3, 3), float32)`` is ``mat33``."""
    dtype = _check_dtype(dtype)
    r, c = (int(shape[0]), int(shape[1]))
    return _composite("matrix", (r, c), dtype, f"mat{r}{c}{_suffix(dtype)}", f"kc::mat_t<{r},{c},{dtype._ctype}>")


def quaternion(dtype=float) -> type:
    """Quaternion type stored (x, y, z, w)."""
    dtype = _check_dtype(dtype)
    return _composite("quat", (4,), dtype, f"quat{_suffix(dtype)}", f"kc::quat_t<{dtype._ctype}>")


def transformation(dtype=float) -> type:
    """Rigid transform: translation p (3) then rotation q (4, x y z w)."""
    dtype = _check_dtype(dtype)
    return _composite("transform", (7,), dtype, f"transform{_suffix(dtype)}", f"kc::transform_t<{dtype._ctype}>")


def _suffix(dtype):
    return {float32: "", float64: "d", float16: "h", int32: "i"}.get(dtype, "_" + dtype._name)


def is_vector(t):
    return isinstance(t, type) and issubclass(t, _CompositeValue) and t._kind == "vector"


def is_matrix(t):
    return isinstance(t, type) and issubclass(t, _CompositeValue) and t._kind == "matrix"


def is_quat(t):
    return isinstance(t, type) and issubclass(t, _CompositeValue) and t._kind == "quat"


def is_transform(t):
    return isinstance(t, type) and issubclass(t, _CompositeValue) and t._kind == "transform"


def is_composite(t):
    return isinstance(t, type) and issubclass(t, _CompositeValue)


# ---------------------------------------------------------------------------------------
# structs


class StructInstance:
    """Host value of a ``@kc.struct`` type."""

    _kind = "struct"

    def __init__(self, **kwargs):
        for name, t in self._fields.items():
            object.__setattr__(self, name, kwargs.pop(name) if name in kwargs else default_value(t))
        if kwargs:
            raise TypeError(f"{self._name} has no field(s) {sorted(kwargs)}")

    def __repr__(self):
        return f"{self._name}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields) + ")"

    def __setattr__(self, name, value):
        t = self._fields.get(name)
        if t is None:
            raise AttributeError(f"struct {self._name} has no field '{name}' (fields: {', '.join(self._fields)})")
        _check_array_field(self, name, t, value)
        object.__setattr__(self, name, value)


def _check_array_field(struct_value, name, t, value):
    """A kc array stored in an array field must have the field's dtype and ndim (else the
    kernel would read its bytes as another type)."""
    if isinstance(t, ArrayType) and hooks.is_array(value):
        same = value.dtype is t.dtype or (is_struct(value.dtype) and value.dtype._ctype == getattr(t.dtype, "_ctype", None))
        if not same or value.ndim != t.ndim:
            raise TypeError(f"struct {struct_value._name} field '{name}' is {t!r}; got an array of "
                            f"{type_repr(value.dtype)} with {value.ndim} dimension(s)")


def struct(cls):
    """Decorator turning an annotated class into a kernel struct type."""
    import inspect

    fields = {name: type_from_annotation(t) for name, t in cls.__annotations__.items()}
    src = ";".join(f"{k}:{type_key(t)}" for k, t in fields.items())
    digest = hashlib.sha256((cls.__qualname__ + src).encode()).hexdigest()[:10]
    ctype_name = f"S_{cls.__name__}_{digest}"

    class _CT(ctypes.Structure):
        _fields_ = [(name, ctypes_of(t)) for name, t in fields.items()]

    attrs = {
        "_name": cls.__name__, "_fields": fields, "_ctype": ctype_name, "_ctypes": _CT,
        "_size": ctypes.sizeof(_CT), "_kind": "struct", "__doc__": cls.__doc__,
        "__module__": cls.__module__,
    }
    for k, v in cls.__dict__.items():
        if not k.startswith("__") and not callable(v) and k not in fields:
            attrs[k] = v
    new = _TypeMeta(cls.__name__, (StructInstance,), attrs)
    try:
        new._source_file = inspect.getsourcefile(cls)
    except (TypeError, OSError):   # classes made in a REPL or `python -c` have no source file
        new._source_file = None
    return new


def is_struct(t):
    return isinstance(t, type) and issubclass(t, StructInstance)


# ---------------------------------------------------------------------------------------
# opaque native types (query iterators and handles added by extensions such as geometry)

opaque_types: dict = {}


class OpaqueBase(metaclass=_TypeMeta):
    """A native type kernels can hold in locals but not pass from Python (e.g. a query state)."""

    _kind = "opaque"


def opaque(name: str, ctype: str) -> type:
    """Declare a native type for builtin signatures: ``opaque("hash_grid_query", "geo::hash_grid_query_t")``."""
    cls = opaque_types.get(name)
    if cls is None:
        cls = _TypeMeta(name, (OpaqueBase,), {"_name": name, "_ctype": ctype, "_size": 0})
        opaque_types[name] = cls
    return cls


def is_opaque(t):
    return isinstance(t, type) and issubclass(t, OpaqueBase)


def is_differentiable_type(t) -> bool:
    """Types that carry adjoints: floats, float composites, structs and tuples of them."""
    if is_float(t):
        return True
    if is_composite(t):
        return t._dtype._is_float
    if is_struct(t) or isinstance(t, Tuple):
        return True
    return False


# ---------------------------------------------------------------------------------------
# helpers used by arrays, the compiler and launch packing


class Tuple:
    """Result type of a function returning several values."""

    _kind = "tuple"

    def __init__(self, types):
        self.types = tuple(types)

    def __eq__(self, o):
        return isinstance(o, Tuple) and o.types == self.types

    def __hash__(self):
        return hash(("tuple",) + self.types)

    def __repr__(self):
        return "tuple(" + ", ".join(type_repr(t) for t in self.types) + ")"


def type_from_annotation(t):
    """Map Python annotations (float, int, bool) to kernel types."""
    if t is float:
        return float32
    if t is int:
        return int32
    if t is _py.bool:
        return bool_
    if isinstance(t, np.dtype) or (isinstance(t, type) and issubclass(t, np.generic)):
        dt = np.dtype(t)
        if dt not in _np_to_scalar:
            names = ", ".join(sorted({str(d) for d in _np_to_scalar}))
            raise TypeError(f"numpy dtype {dt} ({dt.kind!r} kind) has no kernelcore element type; supported: {names}")
        return _np_to_scalar[dt]
    return t


def type_repr(t) -> str:
    if isinstance(t, type):
        return repr(t)
    return str(t)


def type_key(t) -> str:
    """A stable string identifying a type (used in hashes and mangled names)."""
    if isinstance(t, ArrayType):
        return f"array<{type_key(t.dtype)},{t.ndim}>"
    if isinstance(t, IndexedArrayType):
        return f"indexedarray<{type_key(t.dtype)},{t.ndim}>"
    if is_struct(t):
        return t._ctype
    if isinstance(t, Tuple):
        return "tuple<" + ",".join(type_key(x) for x in t.types) + ">"
    return getattr(t, "_ctype", repr(t))


def ctype_name(t) -> str:
    """C++ spelling of a type."""
    if isinstance(t, ArrayType):
        return f"kc::array_t<{ctype_name(t.dtype)}>"
    return t._ctype


def ctypes_of(t):
    """ctypes layout of a type, mirroring the C++ struct."""
    if isinstance(t, ArrayType):
        return array_ctypes
    return t._ctypes


def np_dtype_of(t) -> tuple[np.dtype, tuple]:
    """numpy scalar dtype and the trailing shape used to store one element of type t."""
    if is_scalar(t):
        return np.dtype(t._np), ()
    if is_composite(t):
        return np.dtype(t._dtype._np), t._shape
    if is_struct(t):
        return struct_np_dtype(t), ()
    raise TypeError(f"type {type_repr(t)} cannot be stored in an array")


def struct_np_dtype(t) -> np.dtype:
    """numpy structured dtype with the C layout of struct type t: one named field per struct
    field (vectors and matrices as sub-arrays, nested structs as nested records, array
    fields as opaque bytes), so ``array.numpy()`` of a struct array reads and writes fields."""
    dt = t.__dict__.get("_np_dtype")
    if dt is not None:
        return dt
    names, formats, offsets = [], [], []
    for name, ft in t._fields.items():
        names.append(name)
        offsets.append(getattr(t._ctypes, name).offset)
        if isinstance(ft, ArrayType):
            formats.append(np.dtype((np.void, ctypes.sizeof(ctypes_of(ft)))))
        else:
            base, inner = np_dtype_of(ft)
            formats.append(np.dtype((base, inner)) if inner else base)
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": t._size})
    t._np_dtype = dt
    return dt


def size_of(t) -> int:
    return t._size


def default_value(t):
    if is_scalar(t):
        return t._np(0).item()
    if is_composite(t):
        return t()
    if is_struct(t):
        return t()
    return None


def to_ctypes_value(t, value):
    """Convert a host value to the ctypes object for t (launch packing of scalars/composites)."""
    if is_scalar(t):
        v = _scalar_value(value)
        if t is float16:
            bits = np.array(v, dtype=np.float16).view(np.uint16).item()
            return _half_ctype(bits)
        return t._ctypes(t._np(v).item() if t is not bool_ else _py.bool(v))
    if is_composite(t):
        if type(value) is t:  # fast path: the value already has this exact layout
            return t._ctypes.from_buffer_copy(value._v)
        arr = np.ascontiguousarray(np.asarray(value if not isinstance(value, _CompositeValue) else value._v, dtype=t._dtype._np))
        if arr.size != int(np.prod(t._shape)):
            raise ValueError(f"expected {int(np.prod(t._shape))} components for {type_repr(t)}, got shape {arr.shape}")
        return t._ctypes.from_buffer_copy(arr.tobytes())
    raise TypeError(type_repr(t))


# common aliases
vec2, vec3, vec4 = vector(2, float32), vector(3, float32), vector(4, float32)
vec2d, vec3d, vec4d = vector(2, float64), vector(3, float64), vector(4, float64)
vec2h, vec3h, vec4h = vector(2, float16), vector(3, float16), vector(4, float16)
vec2i, vec3i, vec4i = vector(2, int32), vector(3, int32), vector(4, int32)
mat22, mat33, mat44 = matrix((2, 2), float32), matrix((3, 3), float32), matrix((4, 4), float32)
mat22d, mat33d, mat44d = matrix((2, 2), float64), matrix((3, 3), float64), matrix((4, 4), float64)
quat, quatd, quath = quaternion(float32), quaternion(float64), quaternion(float16)
transform, transformd = transformation(float32), transformation(float64)
spatial_vector, spatial_vectord = vector(6, float32), vector(6, float64)
spatial_matrix, spatial_matrixd = matrix((6, 6), float32), matrix((6, 6), float64)


# -- arrays as a type (the array values themselves live in array.py) -----------------------
MAX_DIMS = 4


class array_ctypes(ctypes.Structure):
    """Mirror of ``kc::array_t<T>`` in native/kc_array.h."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("grad", ctypes.c_void_p),
        ("shape", ctypes.c_int32 * 4),
        ("ndim", ctypes.c_int32),
        ("serial", ctypes.c_int32),  # set by launch() for one-thread CPU launches
        ("strides", ctypes.c_int64 * 4),
        ("keep_grad", ctypes.c_int32),  # 1: grad is a caller's adjoint buffer, stores do not consume it
        ("reserved", ctypes.c_int32),
    ]


class ArrayType:
    """Type of an array argument: element dtype and number of dimensions."""

    _kind = "array"

    def __init__(self, dtype=float32, ndim=1):
        self.dtype = type_from_annotation(dtype)
        self.ndim = int(ndim)
        if not 1 <= self.ndim <= MAX_DIMS:
            raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, got ndim={ndim}")

    def __eq__(self, o):
        return isinstance(o, ArrayType) and o.dtype is self.dtype and o.ndim == self.ndim

    def __hash__(self):
        return hash(("array", type_key(self.dtype), self.ndim))

    def __repr__(self):
        return f"array(dtype={type_repr(self.dtype)}, ndim={self.ndim})"


class IndexedArrayType:
    """Type of an indexedarray argument (Warp's ``indexedarray``): an array of ``dtype`` with
    ``ndim`` dimensions read and written through optional per-dimension index arrays.
    A kernel receives it as the data array plus one int32 index array per dimension (an
    empty one where a dimension is not indexed); see kernelcore/indexedarray.py."""

    _kind = "indexedarray"

    def __init__(self, dtype=float32, ndim=1):
        self.dtype = type_from_annotation(dtype)
        self.ndim = int(ndim)
        if not 1 <= self.ndim <= MAX_DIMS:
            raise ValueError(f"indexedarrays have 1 to {MAX_DIMS} dimensions, got ndim={ndim}")

    def __eq__(self, o):
        return isinstance(o, IndexedArrayType) and o.dtype is self.dtype and o.ndim == self.ndim

    def __hash__(self):
        return hash(("indexedarray", type_key(self.dtype), self.ndim))

    def __repr__(self):
        return f"indexedarray(dtype={type_repr(self.dtype)}, ndim={self.ndim})"

# libdtrt driven from Python (ctypes, GIL held: PyDLL), as a binding would:
# the report of its device mismatch shows the Python line of the call.
import ctypes
import sys


class Device(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("index", ctypes.c_int32)]


rt = ctypes.PyDLL(sys.argv[1])
rt.dt_cpu_device.restype = Device
rt.dt_cuda_device.restype = Device
rt.dt_ones.restype = ctypes.c_void_p
rt.dt_ones.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, Device]
rt.dt_add.restype = ctypes.c_void_p
rt.dt_add.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
shape = (ctypes.c_int64 * 1)(3)


def forward(x, bias):
    return rt.dt_add(x, bias)  # the failing call


x = rt.dt_ones(1, shape, 0, rt.dt_cuda_device(0))
bias = rt.dt_ones(1, shape, 0, rt.dt_cpu_device())  # the culprit, left on the cpu
forward(x, bias)

# A Python host that loads a CUDA-using library the way extension modules
# and ctypes do: RTLD_LOCAL, so its libcudart is outside the global scope.
# PyDLL keeps the GIL during the call, as an extension module does.
import ctypes
import os
import sys

lib = ctypes.PyDLL(sys.argv[1], mode=os.RTLD_LOCAL)
rc = lib.cuda_user_main(1)  # the copies: this line
sys.exit(rc)

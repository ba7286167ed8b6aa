"""The simulated GPUs' error texts and version rules: PyTorch's own texts in one table, and the rules
that differ between PyTorch versions in another, both chosen by the torch version the program runs.

TEXTS maps an error to its text per version: ``((since, template), ...)``, the last entry whose
``since`` (major, minor) is at most the version applies. Templates are ``str.format`` strings over the
devices (``{odd}``: the operand found on another device, ``{common}``: its peers'), the argument
(``{arg}``), the kernel's method (``{method}`` as 2.1+ names it, ``{method_v1}`` as before) and, for
some, the devices of named operands (``{mask_dev}``, ``{self_dev}``). The 2.x texts are those of
tests/adapters/data/torch2.11-device-errors.txt (PyTorch 2.11 on a GPU); the 1.x ones what this simulation gave
on 1.13 from the start.

RULES maps a behaviour that a PyTorch version introduced to the version (see docs/torch2.md for which
of them were measured and which read from PyTorch's source).

ATEN maps an op to the operands its CUDA kernel checks, in its order, with the kernel's argument names
and its method, from the version the text names them.
"""

V1 = (1, 0)
V2 = (2, 0)
V21 = (2, 1)  # the "but got X is on ..." form of the per-argument check

_DEVICES = "Expected all tensors to be on the same device, but found at least two devices, {common} and {odd}!"

TEXTS = {
    # the common check (TensorIterator, foreach, ...): no argument named
    "devices": ((V1, _DEVICES),),
    # a kernel's generated device check, naming the argument and the kernel
    "argument": (
        (V1, _DEVICES + " (when checking argument for argument {arg} in method {method_v1})"),
        (V21, "Expected all tensors to be on the same device, but got {arg} is on {odd}, different from other "
              "tensors on {common} (when checking argument in method {method})"),
    ),
    # a convolution on two GPUs: the types agree, and cuDNN's kernel finds the devices apart
    "conv_devices": (
        (V1, _DEVICES + " (when checking argument for argument {arg} in method wrapper__cudnn_convolution)"),
        (V21, "Expected all tensors to be on the same device, but got {arg} is on {odd}, different from other "
              "tensors on {common} (when checking argument in method wrapper_CUDA__cudnn_convolution)"),
    ),
    # a convolution between the cpu and a GPU, told by the legacy type names (2.x: a GPU input's)
    "conv_types": (
        (V1, "Input type ({input_type}) and weight type ({weight_type}) should be the same or input should be a "
             "MKLDNN tensor and weight is a dense tensor"),
        (V2, "Input type ({input_type}) and weight type ({weight_type}) should be the same"),
    ),
    # 2.x: F.conv1d/conv2d (nn.Conv1d/Conv2d) of a cpu input reach the CUDA slow kernel (rule "conv_slow")
    "conv_slow": ((V2, "Expected all tensors to be on the same device, but got weight is on {odd}, different from "
                       "other tensors on {common} (when checking argument in method "
                       "wrapper_CUDA___slow_conv2d_forward)"),),
    "rnn_hidden": ((V1, "Input and hidden tensors are not at the same device, found input tensor at {common} and "
                        "hidden tensor at {odd}"),),
    "rnn_parameter": ((V1, "Input and parameter tensors are not at the same device, found input tensor at {common} "
                           "and parameter tensor at {odd}"),),
    "masked_fill": (
        (V1, _DEVICES),
        (V2, "expected self and mask to be on the same device, but got mask on {mask_dev} and self on {self_dev}"),
    ),
    "take_along_dim": (
        (V1, _DEVICES),
        (V2, "Expected tensor to have {common} Device, but got tensor with {odd} Device (while checking arguments "
             "for torch.take_along_dim():)"),
    ),
    "numpy": ((V1, "can't convert {odd} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                   "memory first."),),
    "set_data": ((V1, "Attempted to call `variable.set_data(tensor)`, but `variable` and  `tensor` have "
                      "incompatible tensor type."),),
    "data_parallel": ((V1, "module must have its parameters and buffers on device {common} (device_ids[0]) but "
                           "found one of them on device: {odd}"),),
    # ProcessGroupNCCL's check of a collective's tensors (check_gpu_single_tensor): the same text on 1.13 and
    # 2.x, raised as a ValueError on 2.x (RULES "nccl_value_error")
    "nccl_cpu_tensor": ((V1, "Tensors must be CUDA and dense"),),
    # ProcessGroup::getBackend(DeviceType) (ProcessGroup.cpp): a collective dispatched on the cpu (no GPU
    # tensor among the arguments the c10d op dispatches on) of a group with no backend for the cpu, as
    # init_process_group("nccl") makes from 2.x's Backend.backend_capability (nccl: ["cuda"]; RULES
    # "nccl_cuda_only"). The text is 2.13's own, measured here through its dispatcher (tests/adapters/ddp_checks.py)
    "nccl_no_cpu_backend": ((V1, "No backend type associated with device type cpu"),),
    "ordinal": ((V1, "CUDA error: invalid device ordinal"),),
    # indexing's check of its indices (TensorAdvancedIndexing.cpp, check_indices_on_cpu_or_selfdevice; the
    # same in the libtorch_cpu of 1.13 and of 2.13)
    "index_devices": ((V1, "indices should be either on cpu or on the same device as the indexed tensor "
                           "({self_dev})"),),
    # TensorIterator's compute_types: a binary op takes one 0-dim cpu tensor next to a GPU's, not two
    "cpu_scalars": ((V1, "Trying to pass too many CPU scalars to non-CPU kernel!"),),
    "event": ((V1, "Both events must be recorded before calculating elapsed time."),),
}

RULES = {
    # nn.TransformerEncoder/Decoder pass is_causal when the mask is the square causal mask, and
    # F.multi_head_attention_forward then drops the mask for SDPA's is_causal (no key padding mask,
    # no weights asked for): the mask's device is never checked
    "causal_mask_hint": V21,
    # torch.normal(Tensor mean, Tensor std) checks that both are on one device (1.13's CUDA kernel did not)
    "normal_checks_devices": V2,
    # F.conv1d/conv2d of a cpu input with a GPU weight: the CUDA slow kernel's device check
    "conv_slow": V2,
    # ProcessGroupNCCL's check_gpu_single_tensor raises ValueError (C10_THROW_ERROR(ValueError, ...)) where
    # 1.13 raised RuntimeError (TORCH_CHECK): read from PyTorch's 2.x source, not run; the first release
    # with it is not pinned down here, taken as 2.0
    "nccl_value_error": V2,
    # init_process_group("nccl") registers NCCL for the cuda device type only (BackendConfig from
    # Backend.backend_capability), so a collective of cpu tensors finds no backend ("nccl_no_cpu_backend")
    # instead of reaching NCCL's own check. Read from 2.13's distributed_c10d.py and measured on 2.13; 1.13
    # had one backend for every device (NCCL's check). The first release with it is not pinned down here
    # (not read from 2.0's or 2.1's source): taken as 2.1
    "nccl_cuda_only": V21,
    # ATEN's entries marked 2.1: their kernels name the argument in the text
    "aten_21": V21,
}

# op -> (((its argument name in the call, the kernel's name for it), ... in the kernel's order),
#        the kernel's method as 2.1+ names it, the version from which the text names them)
ATEN = {
    "linear": ((("bias", "self"), ("input", "mat1"), ("weight", "mat2")), "wrapper_CUDA_addmm", V1),
    "embedding": ((("weight", "self"), ("input", "index")), "wrapper_CUDA__index_select", V1),
    "cross_entropy": ((("input", "self"), ("target", "target"), ("weight", "weight")),
                      "wrapper_CUDA_nll_loss_forward", V1),
    "nll_loss": ((("input", "self"), ("target", "target"), ("weight", "weight")), "wrapper_CUDA_nll_loss_forward",
                 V1),
    "mm": ((("input", "self"), ("mat2", "mat2")), "wrapper_CUDA_mm", V1),
    "bmm": ((("input", "self"), ("mat2", "mat2")), "wrapper_CUDA_bmm", V1),
    "addmm": ((("input", "self"), ("mat1", "mat1"), ("mat2", "mat2")), "wrapper_CUDA_addmm", V1),
    # from 2.1 (tests/adapters/data/torch2.11-device-errors.txt)
    "linear:mm": ((("input", "self"), ("weight", "mat2")), "wrapper_CUDA_mm", V21),  # linear without bias
    "matmul": ((("input", "self"), ("other", "mat2")), "wrapper_CUDA_mm", V21),
    "__matmul__": ((("self", "self"), ("other", "mat2")), "wrapper_CUDA_mm", V21),
    "cat": ((("tensors", "tensors"),), "wrapper_CUDA_cat", V21),
    "stack": ((("tensors", "tensors"),), "wrapper_CUDA_cat", V21),
    "index_select": ((("input", "self"), ("self", "self"), ("index", "index")), "wrapper_CUDA__index_select", V21),
    "gather": ((("input", "self"), ("self", "self"), ("index", "index")), "wrapper_CUDA_gather", V21),
    "scatter_": ((("self", "self"), ("index", "index"), ("src", "src")), "wrapper_CUDA_scatter__value", V21),
    "index_add_": ((("self", "self"), ("index", "index"), ("source", "source")), "wrapper_CUDA_index_add_", V21),
    "layer_norm": ((("input", "input"), ("weight", "weight"), ("bias", "bias")), "wrapper_CUDA__native_layer_norm",
                   V21),
    "batch_norm": ((("input", "input"), ("weight", "weight"), ("bias", "bias"), ("running_mean", "running_mean"),
                    ("running_var", "running_var")), "wrapper_CUDA__native_batch_norm", V21),
    "clamp": ((("input", "self"), ("self", "self"), ("min", "min"), ("max", "max")), "wrapper_CUDA_clamp_Tensor",
              V21),
    "grid_sample": ((("input", "input"), ("grid", "grid")), "wrapper_CUDA__grid_sampler_2d", V21),
    "searchsorted": ((("sorted_sequence", "sorted_sequence"), ("input", "self"), ("values", "self")),
                     "wrapper_CUDA_Tensor_searchsorted", V21),
    "bucketize": ((("input", "self"), ("boundaries", "boundaries")), "wrapper_CUDA_Tensor_bucketize", V21),
    "cdist": ((("x1", "x1"), ("x2", "x2")), "wrapper_CUDA___cdist_forward", V21),
    "dot": ((("input", "self"), ("self", "self"), ("tensor", "tensor"), ("other", "tensor")), "wrapper_CUDA__dot",
            V21),
    "prelu": ((("input", "self"), ("weight", "weight")), "wrapper_CUDA___prelu_kernel", V21),
    "normal": ((("mean", "mean"), ("std", "std")), "wrapper_CUDA_Tensor_Tensor_normal", V21),
    # composite ops, by the kernel they fail in on 2.11 (the table's rows einsum, embedding_bag_offsets_cpu,
    # sdpa_mask_cpu, cosine_similarity): einsum of two operands is bmm(the first, the second);
    # cosine_similarity's failing kernel is clamp_min_ of x2's norm by x1's (the one row measured, x1 on
    # the GPU: "min is on cuda:0, ... other tensors on cpu"; the other way round is inferred from it)
    "einsum": ((("arg1", "self"), ("arg2", "mat2")), "wrapper_CUDA_bmm", V21),
    "embedding_bag": ((("weight", "weight"), ("input", "indices"), ("offsets", "offsets"),
                       ("per_sample_weights", "per_sample_weights")), "wrapper_CUDA___embedding_bag_forward_only",
                      V21),
    # (its operands as the recorder names them where torch's documentation gives no names: input, arg1, arg2)
    "scaled_dot_product_attention": ((("query", "query"), ("input", "query"), ("key", "key"), ("arg1", "key"),
                                      ("value", "value"), ("arg2", "value"), ("attn_mask", "attn_bias")),
                                     "wrapper_CUDA___scaled_dot_product_efficient_attention", V21),
    "cosine_similarity": ((("x2", "self"), ("x1", "min")), "wrapper_CUDA_clamp_min__Tensor", V21),
}


def parse_version(text):
    """(major, minor) of a version string ("2.11.0+cu130", "1.13.1"); None when it is none."""
    try:
        major, minor = text.split("+")[0].split(".")[:2]
        return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)
    except (ValueError, AttributeError):
        return None


def has(rule, version):
    """Whether torch `version` has the behaviour `rule` (a RULES key)."""
    return version >= RULES[rule]


def aten(op, version):
    """ATEN's entry for op where version's text names its arguments, else None."""
    entry = ATEN.get(op)
    return entry if entry is not None and version >= entry[2] else None


def text(key, version, **fields):
    """PyTorch's text for error `key` on torch `version`, filled in with fields."""
    chosen = None
    for since, template in TEXTS[key]:
        if version >= since:
            chosen = template
    if chosen is None:
        raise KeyError("no text for %s before %d.%d" % (key, TEXTS[key][0][0][0], TEXTS[key][0][0][1]))
    method = fields.get("method")
    if method is not None and "method_v1" not in fields:
        fields["method_v1"] = method.replace("wrapper_CUDA_", "wrapper_", 1)
    return chosen.format(**fields)

# Run 193 (session 55, call 1) = next_one_gpu_2.sh as written.
# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~4-5 minutes), any time: A/B of the step input kernel (S:
# +step-inputs, TalkerRunner's step_input_kernel, kernels/frame_embedding.py's step_inputs, built in session 54)
# against today's defaults (M, with session 54's projected lookups and lookup kernels), in the order M, S, M, S in one
# process, 1.7B, at 1, 16 and 32 rows, with the bench's checks (S against the PyTorch gathers, bit for bit; graph
# against eager).
# Why: before the code predictor's first pass a step reads its rows' slots with 15 PyTorch kernels (drawn counts,
# frame, codebook 0's id into the codes and its embedding, the last hidden state and the stack, the trailing text id's
# select and row, the position; tools/census_talker_step.py). A PyTorch kernel never launches early; run 190's lookup
# kernels took 30 of them out for 77-79 us of a 1-row step (~2.6 us each). S does those reads in one Triton kernel
# that launches programmatically.
# Prediction: S against M 1 row -0.5 to -1.5%, 16 rows -0.5 to -1.2%, 32 rows -0.4 to -1%; S = M bit for bit.
# Rule (with next_one_gpu_3.sh's 128 and 512 rows): the talker setting step_input_kernel on by default if S is >= 0.3%
# faster than M at 1 and at 16 rows in all three comparisons (M1-S1, S1-M2, M2-S2), not > 0.3% slower at 32, 128 or
# 512 rows in all three, and its check equal (codes, caches, hidden, state); else it stays off.
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels
S=$M+step-inputs
talker_order 1.7B 1,16,32 "$M,$S,$M,$S" ab

# One-GPU call (nvidia-h200 or nvidia-h100-x1, ~5-6 minutes), any time: A/B of the step input kernel (S: +step-inputs,
# TalkerRunner's step_input_kernel, kernels/frame_embedding.py's step_inputs, built in session 54) against today's
# defaults (M, with session 54's projected lookups and lookup kernels), and of the step write kernel on top of it (W:
# S+step-writes, step_write_kernel, kernels/step_writes.py, built in session 55), in the order M, S, W, M, S, W in one
# process, 1.7B, at 1 and 16 rows, with the bench's checks (each against the PyTorch ops, bit for bit; graph against
# eager). next_one_gpu_3.sh has 32, 128 and 512 rows.
# Why: a PyTorch kernel never launches early; run 190's lookup kernels took 30 of them out for 77-79 us of a 1-row step
# (~2.6 us each). Before the code predictor's first pass a step reads its rows' slots with 15 PyTorch kernels (S: one
# Triton kernel); after the talker's draw it writes them with 8 (next position add + index_put, history, last hidden
# state, 4 fills resetting the scratch slot; W: one Triton kernel). tools/census_talker_step.py counts both.
# Prediction: S against M 1 row -0.5 to -1.5%, 16 rows -0.5 to -1.2%, 32 rows -0.4 to -1%, 128 rows -0.2 to -0.6%, 512
# rows -0.1 to -0.4%. W against S 1 row -0.3 to -0.9%, 16 rows -0.3 to -0.8%, 32 rows -0.2 to -0.7%, 128 rows -0.1 to
# -0.5%, 512 rows -0.05 to -0.3%. Each bit for bit against the PyTorch ops.
# Rules (over both scripts): step_input_kernel on by default if S is >= 0.3% faster than M at 1 and at 16 rows in all
# three comparisons (M1-S1, S1-M2, M2-S2), not > 0.3% slower at 32, 128 or 512 rows in all three, and its check equal
# (codes, caches, hidden, state). step_write_kernel on by default if step_input_kernel is and W is >= 0.2% faster than
# S at 1 and 16 rows in all three comparisons (S1-W1, W1-S2, S2-W2), not > 0.3% slower at 32-512 in all three, and its
# check equal. Otherwise each stays off (if S fails and W passes against S, W gets an A/B of its own against M).
source tools/device/setup.sh
stamp start
M=fused+sampler+kv-write+add-norm+norm-rope-write+fused-draws+skinny-linear+skinny-dot+by-shape+dot-32+pdl+pdl-to-64+projected-lookups+lookup-kernels
S=$M+step-inputs
W=$S+step-writes
talker_order 1.7B 1,16 "$M,$S,$W,$M,$S,$W" abc

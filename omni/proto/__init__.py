"""Generated gRPC code for protos/omni/v1 (tools/gen_protos.py); do not edit."""

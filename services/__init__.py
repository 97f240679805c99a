"""gRPC services (mapped to the omni.services package)."""

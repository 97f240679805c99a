"""The talker gRPC service (continuous-batching engine in omni.talker.engine)."""

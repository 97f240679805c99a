"""Why a benchmark stream was cut (issue 9): when the codec ends its Decode call while the gateway still writes
chunks to it, the gateway reports the codec's own status (hop, address, code, details). Before, grpc.aio's
InvalidStateError ("RPC already finished") escaped instead (logged as a client disconnect), or the codec's error
was blamed on the talker."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from omni.services.codec.config import CodecConfig
from omni.services.codec.service import build_codec_service, warm_up
from omni.services.common.packing import pack_codes
from omni.services.gateway.backend import BackendError
from omni.services.gateway.grpc_backend import CodecCallEnded, GrpcBackend, PreparedRequest, _to_codec

from omni.proto import codec_pb2, common_pb2, talker_pb2


def test_a_codec_that_ends_the_call_mid_stream_is_reported_with_its_status(tiny_model_dir, caplog):
    model = tiny_model_dir("custom_voice")
    caplog.set_level(logging.INFO, logger="omni.codec")

    async def main() -> None:
        service, engine = build_codec_service(CodecConfig(model=str(model), host="127.0.0.1", port=0, grace_s=1.0))
        await service.start()
        engine.start()
        await warm_up(engine)
        await service.set_serving()
        backend = GrpcBackend(model, talkers=[], codecs=[f"127.0.0.1:{service.port}"], refencs=[])
        try:
            await backend.start()
            call, replica = await backend._open_codec("r1", PreparedRequest(talker_pb2.GenerateRequest()))
            codes = np.full((2, 16), 4000)  # beyond the codebook: the real codec refuses the chunk and ends the call
            chunk = common_pb2.CodecChunk(
                codes=pack_codes(codes), num_frames=2, num_codebooks=16, first_frame_index=0, first=True
            )
            await call.write(codec_pb2.DecodeRequest(chunk=chunk))
            await call.code()  # ended
            with pytest.raises(asyncio.InvalidStateError):  # what the gateway's pump let escape before
                await call.write(codec_pb2.DecodeRequest(chunk=chunk))
            with pytest.raises(CodecCallEnded):
                await _to_codec(call.write(codec_pb2.DecodeRequest(chunk=chunk)))
            with pytest.raises(BackendError) as failure:
                await backend._raise_codec_status(call, replica)
            message = str(failure.value)
            assert message.startswith(f"codec {replica.address} failed mid-stream: INVALID_ARGUMENT: chunk at frame 0")
            assert "codes must be in [0, " in message
            assert replica in backend.codecs.ranked()  # a refused request does not mark the replica down
        finally:
            await backend.close()
            await service.stop(0)
            await engine.stop()

    asyncio.run(main())
    # The codec's request log line says why it ended the stream, too.
    (decode,) = [r.fields for r in caplog.records if r.getMessage() == "decode" and r.fields["request_id"] == "r1"]
    assert decode["outcome"] == "invalid_argument" and decode["error"].startswith("chunk at frame 0: codes must be")

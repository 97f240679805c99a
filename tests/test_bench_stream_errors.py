"""Why a benchmark stream was cut (issue 9): when the codec ends a request's stream while the gateway still writes
chunks to it, the gateway reports the codec's own status (hop, address, code, details). Before, grpc.aio's
InvalidStateError ("RPC already finished") escaped instead (logged as a client disconnect), or the codec's error
was blamed on the talker. The stream is one of the gateway's shared DecodeMany call: the call and the codec's other
streams on it go on."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from omni.services.codec.config import CodecConfig
from omni.services.codec.service import build_codec_service, warm_up
from omni.services.common.packing import pack_codes
from omni.services.gateway.backend import BackendError
from omni.services.gateway.grpc_backend import GrpcBackend, PreparedRequest
from omni.services.gateway.shared_calls import StreamFailed

from omni.proto import common_pb2, talker_pb2


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
            stream, replica = await backend._open_codec("r1", PreparedRequest(talker_pb2.GenerateRequest()))
            bystander, _ = await backend._open_codec("r2", PreparedRequest(talker_pb2.GenerateRequest()))
            assert bystander.call is stream.call  # one shared call
            codes = np.full((2, 16), 4000)  # beyond the codebook: the real codec refuses the chunk and ends the stream
            chunk = common_pb2.CodecChunk(
                codes=pack_codes(codes), num_frames=2, num_codebooks=16, first_frame_index=0, first=True
            )
            await stream.write_chunk(chunk)
            with pytest.raises(StreamFailed) as ended:
                await stream.read()
            with pytest.raises(StreamFailed):  # the pump's next write fails with the codec's status too
                await stream.write_chunk(chunk)
            with pytest.raises(BackendError) as failure:
                backend._raise_codec_failure(ended.value, replica)
            message = str(failure.value)
            assert message.startswith(f"codec {replica.address} failed mid-stream: INVALID_ARGUMENT: chunk at frame 0")
            assert "codes must be in [0, " in message
            assert replica in backend.codecs.ranked()  # a refused request does not mark the replica down
            # The other stream on the call still decodes.
            good = common_pb2.CodecChunk(
                codes=pack_codes(np.ones((2, 16), dtype=np.int64)), num_frames=2, num_codebooks=16, last=True
            )
            await bystander.write_chunk(good)
            audio, summary = await bystander.read(), await bystander.read()
            assert audio.audio.num_frames == 2 and audio.audio.last and summary.summary.num_frames == 2
        finally:
            await backend.close()
            await service.stop(0)
            await engine.stop()

    asyncio.run(main())
    # The codec's request log line says why it ended the stream, too.
    (decode,) = [r.fields for r in caplog.records if r.getMessage() == "decode" and r.fields["request_id"] == "r1"]
    assert decode["outcome"] == "invalid_argument" and decode["error"].startswith("chunk at frame 0: codes must be")

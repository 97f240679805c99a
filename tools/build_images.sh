#!/usr/bin/env bash
# Smoke-build the gateway image without a Docker engine or registry access (infra.md §6), then run
# `omni --help` in it. A debootstrap Debian 12 rootfs stands in for python:3.11-slim (no registry pulls here);
# pip inside the build uses this machine's pip setup (local torch CPU wheel, TLS CA) through read-only mounts.
# The GPU images (Dockerfile.talker / .codec) need the CUDA base and are only linted here.
#   tools/build_images.sh            (make images)
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${OMNI_IMAGES_DIR:-${TMPDIR:-/tmp}/omni-images}
BASE=localhost/omni-debian-py:bookworm
mkdir -p "$WORK"

need=()
for tool in podman buildah debootstrap runc; do command -v "$tool" >/dev/null || need+=("$tool"); done
if ((${#need[@]})); then
    apt-get install -y -q --no-install-recommends podman buildah runc fuse-overlayfs uidmap debootstrap
fi

# podman settings that work on this machine kind (cgroup v1 hybrid, no CAP_SYS_RESOURCE).
cat >"$WORK/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
cat >"$WORK/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$WORK/storage/root"
runroot = "$WORK/storage/run"
CONF
export CONTAINERS_CONF="$WORK/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/storage.conf"

if ! podman image exists "$BASE"; then
    rm -rf "$WORK/rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$WORK/rootfs" \
        http://deb.debian.org/debian
    tar -C "$WORK/rootfs" -cf "$WORK/rootfs.tar" .
    podman import "$WORK/rootfs.tar" "$BASE"
    rm -rf "$WORK/rootfs" "$WORK/rootfs.tar"
fi

# pip in the build: PyPI through this network's CA, torch from the local CPU wheel.
cat >"$WORK/pip.conf" <<CONF
[global]
cert = /run/host-ca.crt
find-links = /opt/wheels
CONF
podman build --isolation chroot \
    --build-arg PYTHON_IMAGE="$BASE" --build-arg TORCH_INDEX=https://pypi.org/simple \
    -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro \
    -v "$WORK/pip.conf:/etc/pip.conf:ro" -v /opt/wheels:/opt/wheels:ro \
    -f Dockerfile.gateway -t localhost/omni-gateway:dev .
podman run --rm --network none localhost/omni-gateway:dev --help
podman run --rm --network none --entrypoint python localhost/omni-gateway:dev -c \
    "import shutil, torch, omni.services.gateway.app, omni.services.refenc.service; assert shutil.which('ffmpeg'); print('imports ok, torch', torch.__version__)"
echo "built localhost/omni-gateway:dev"

"""A root file system tar → an OCI image archive, byte for byte the same for the same input.

    python3 image/oci.py ROOTFS.tar OUT.tar --name ipamd:TAG --revision COMMIT

Every time stamp is SOURCE_DATE_EPOCH (the commit's), the layer is gzip'd without a name or
time, JSON is written with sorted keys, the archive's members are sorted and owned by 0:0.
The archive holds both an OCI layout (index.json, for `podman load`) and a Docker
manifest.json (for `docker load`) over the same blobs. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def source_date_epoch() -> int:
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if not value or not value.isdigit():
        raise SystemExit("oci.py: SOURCE_DATE_EPOCH must be set (the commit's time)")
    return int(value)


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def gzip_layer(rootfs: Path, out: Path) -> None:
    """gzip with no file name and time 0: the same bytes in, the same bytes out."""
    with (rootfs.open("rb") as src, out.open("wb") as raw,
          gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz):
        shutil.copyfileobj(src, gz, 1 << 20)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def image_config(diff_id: str, created: str, revision: str, version: str) -> dict[str, Any]:
    return {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            # systemd is PID 1: it starts ipamd.service (supervisord: postgres + ipamd).
            "Entrypoint": ["/sbin/init"],
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "container=oci"],
            "StopSignal": "SIGRTMIN+3",
            "ExposedPorts": {"8443/tcp": {}, "67/udp": {}},
            "Volumes": {"/var/lib/ipamd": {}},
            "Labels": {"org.opencontainers.image.revision": revision,
                       "org.opencontainers.image.version": version,
                       "org.opencontainers.image.title": "ipamd appliance"},
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": created, "created_by": "image/build.sh (mmdebstrap)"}],
    }


def build(rootfs: Path, out: Path, name: str, revision: str) -> None:
    epoch = source_date_epoch()
    created = dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    version = name.rsplit(":", 1)[-1]
    with tempfile.TemporaryDirectory(dir=out.parent) as work:
        layer = Path(work) / "layer"
        gzip_layer(rootfs, layer)
        layer_digest, diff_id = sha256(layer), sha256(rootfs)
        config = canonical(image_config(diff_id, created, revision, version))
        config_digest = hashlib.sha256(config).hexdigest()
        manifest = canonical({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": f"sha256:{config_digest}",
                       "size": len(config)},
            "layers": [{"mediaType": OCI_LAYER, "digest": f"sha256:{layer_digest}",
                        "size": layer.stat().st_size}],
        })
        manifest_digest = hashlib.sha256(manifest).hexdigest()
        index = canonical({
            "schemaVersion": 2,
            "manifests": [{"mediaType": OCI_MANIFEST, "digest": f"sha256:{manifest_digest}",
                           "size": len(manifest),
                           "annotations": {"org.opencontainers.image.ref.name": name}}],
        })
        docker = canonical([{"Config": f"blobs/sha256/{config_digest}", "RepoTags": [name],
                             "Layers": [f"blobs/sha256/{layer_digest}"]}])
        members: list[tuple[str, bytes | Path]] = [
            ("blobs", b""), ("blobs/sha256", b""),
            (f"blobs/sha256/{config_digest}", config),
            (f"blobs/sha256/{layer_digest}", layer),
            (f"blobs/sha256/{manifest_digest}", manifest),
            ("index.json", index), ("manifest.json", docker),
            ("oci-layout", canonical({"imageLayoutVersion": "1.0.0"})),
        ]
        partial = out.with_suffix(".partial")
        with tarfile.open(partial, "w", format=tarfile.USTAR_FORMAT) as tar:
            for member, content in sorted(members, key=lambda m: m[0]):
                info = tarfile.TarInfo(member)
                info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
                if member in ("blobs", "blobs/sha256"):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                elif isinstance(content, Path):
                    info.size, info.mode = content.stat().st_size, 0o644
                    with content.open("rb") as handle:
                        tar.addfile(info, handle)
                else:
                    info.size, info.mode = len(content), 0o644
                    tar.addfile(info, io.BytesIO(content))
        partial.replace(out)


def listing(archive: Path) -> list[str]:
    """One line per file of the image's layer: name, mode, owner, time, type, content hash
    (what `make image-verify` compares when two builds differ)."""
    lines = []
    with tarfile.open(archive) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
        layer = outer.extractfile(manifest[0]["Layers"][0])
        with tarfile.open(fileobj=gzip.GzipFile(fileobj=layer), mode="r|") as tar:
            for m in tar:
                content = tar.extractfile(m) if m.isfile() else None
                digest = hashlib.sha256(content.read()).hexdigest() if content else m.linkname
                lines.append(f"{m.name} {m.mode:o} {m.uid}:{m.gid} {m.mtime} "
                             f"{m.type.decode()} {digest}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list ROOTFS (an image archive)")
    parser.add_argument("rootfs", type=Path)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--name")
    parser.add_argument("--revision")
    args = parser.parse_args()
    if args.list:
        print("\n".join(listing(args.rootfs)))
        return
    if not (args.out and args.name and args.revision):
        parser.error("OUT, --name and --revision are needed to build")
    build(args.rootfs, args.out, args.name, args.revision)


if __name__ == "__main__":
    main()

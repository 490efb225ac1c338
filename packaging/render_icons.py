"""Render the app icon (``resources/icons/fabric-designer.svg``) to the committed bitmaps.

Writes, relative to the repository root:

- ``packaging/linux/icons/hicolor/{48x48,128x128,256x256}/apps/<APP_ID>.png`` for the
  freedesktop icon theme (the scalable SVG is installed from ``resources/icons``);
- ``packaging/icons/fabric-designer.ico`` (Windows: 16-256 px, PNG-compressed entries);
- ``packaging/icons/fabric-designer.icns`` (macOS: 16-1024 px, PNG entries).

Run it after editing the SVG: ``python packaging/render_icons.py``.  It needs only
PySide6 (QSvgRenderer), which the app depends on anyway.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "io.github.fabricdesigner.FabricDesigner"
SVG = ROOT / "resources" / "icons" / "fabric-designer.svg"
LINUX_SIZES = (48, 128, 256)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
#: icns element types that hold a PNG of the given pixel size.
ICNS_TYPES = {16: b"icp4", 32: b"icp5", 64: b"icp6", 128: b"ic07", 256: b"ic08",
              512: b"ic09", 1024: b"ic10"}


def render_png(renderer: QSvgRenderer, size: int) -> bytes:
    """The icon as PNG bytes, ``size`` x ``size`` pixels on a transparent background."""
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise RuntimeError(f"could not encode the {size}px icon as PNG")
    return bytes(data.data())


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico holding PNG-compressed images (supported since Windows Vista)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        data = pngs[size]
        # Width/height are one byte each; 0 means 256.
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32,
                               len(data), offset + len(blobs))
        blobs += data
    return header + entries + blobs


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns holding PNG elements."""
    body = b"".join(ICNS_TYPES[size] + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
                    for size in sorted(pngs))
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main() -> int:
    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        print(f"render_icons: {SVG} is not a valid SVG", file=sys.stderr)
        return 1
    cache: dict[int, bytes] = {}

    def png(size: int) -> bytes:
        if size not in cache:
            cache[size] = render_png(renderer, size)
        return cache[size]

    written = []
    for size in LINUX_SIZES:
        out = (ROOT / "packaging" / "linux" / "icons" / "hicolor" / f"{size}x{size}" / "apps"
               / f"{APP_ID}.png")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(png(size))
        written.append(out)
    icons = ROOT / "packaging" / "icons"
    icons.mkdir(exist_ok=True)
    (icons / "fabric-designer.ico").write_bytes(ico_bytes({s: png(s) for s in ICO_SIZES}))
    (icons / "fabric-designer.icns").write_bytes(icns_bytes({s: png(s) for s in ICNS_TYPES}))
    written += [icons / "fabric-designer.ico", icons / "fabric-designer.icns"]
    for path in written:
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

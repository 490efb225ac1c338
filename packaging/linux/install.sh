#!/usr/bin/env bash
# Install (or remove) Fabric Designer's desktop integration for the current user: the
# menu entry, AppStream metainfo, icons and the *.fabric.json MIME type, so a design
# opens with a double-click.
#
#   packaging/linux/install.sh                   # Exec=fabric-designer (pip/pipx on PATH)
#   packaging/linux/install.sh --exec "$PWD/dist/fabric-designer/fabric-designer"
#   packaging/linux/install.sh --uninstall
#   packaging/linux/install.sh --prefix /usr/local/share      # system-wide (as root)
#
# Default prefix: ${XDG_DATA_HOME:-~/.local/share}.  The caches (MIME database, desktop
# database, icon cache) are refreshed when their tools are installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
id=io.github.fabricdesigner.FabricDesigner
prefix=${XDG_DATA_HOME:-$HOME/.local/share}
exec_path=""
uninstall=0

while [ $# -gt 0 ]; do
  case $1 in
    --exec) exec_path=${2:?--exec needs a path}; shift 2 ;;
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

sizes=(48 128 256)
files=(
  "applications/$id.desktop"
  "metainfo/$id.metainfo.xml"
  "mime/packages/$id.xml"
  "icons/hicolor/scalable/apps/$id.svg"
)
for size in "${sizes[@]}"; do files+=("icons/hicolor/${size}x${size}/apps/$id.png"); done

refresh() {
  if command -v update-mime-database >/dev/null; then
    update-mime-database "$prefix/mime"
  fi
  if command -v update-desktop-database >/dev/null; then
    update-desktop-database -q "$prefix/applications" || true
  fi
  if command -v gtk-update-icon-cache >/dev/null && [ -f "$prefix/icons/hicolor/index.theme" ]; then
    gtk-update-icon-cache -q -t "$prefix/icons/hicolor" || true
  fi
}

if [ "$uninstall" = 1 ]; then
  for f in "${files[@]}"; do rm -f "$prefix/$f"; done
  refresh
  echo "removed Fabric Designer's desktop integration from $prefix"
  exit 0
fi

if [ -n "$exec_path" ]; then
  [ -x "$exec_path" ] || { echo "install.sh: $exec_path is not an executable" >&2; exit 1; }
  exec_path=$(cd "$(dirname "$exec_path")" && pwd)/$(basename "$exec_path")
fi

mkdir -p "$prefix/applications" "$prefix/metainfo" "$prefix/mime/packages" \
  "$prefix/icons/hicolor/scalable/apps"
# The desktop entry: Exec and TryExec point at --exec when given (quoted per the
# Desktop Entry spec, so a path with spaces works).
while IFS= read -r line || [ -n "$line" ]; do
  if [ -n "$exec_path" ]; then
    case $line in
      Exec=*) line="Exec=\"$exec_path\" %f" ;;
      TryExec=*) line="TryExec=$exec_path" ;;
    esac
  fi
  printf '%s\n' "$line"
done < "$here/$id.desktop" > "$prefix/applications/$id.desktop"
cp "$here/$id.metainfo.xml" "$prefix/metainfo/"
cp "$here/$id.xml" "$prefix/mime/packages/"
cp "$root/resources/icons/fabric-designer.svg" "$prefix/icons/hicolor/scalable/apps/$id.svg"
for size in "${sizes[@]}"; do
  mkdir -p "$prefix/icons/hicolor/${size}x${size}/apps"
  cp "$here/icons/hicolor/${size}x${size}/apps/$id.png" "$prefix/icons/hicolor/${size}x${size}/apps/"
done
refresh
echo "installed Fabric Designer's desktop integration into $prefix"

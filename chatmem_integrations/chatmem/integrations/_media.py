"""Media helpers shared by the conversions: data URLs, mime guesses, and the per-media
record of what a format's part could not carry."""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Callable, Mapping
from typing import Any

from chatmem.core import Media

_FIELDS = ("mime_type", "id", "name")


def b64(data: bytes) -> str:
    """Standard base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """Strict inverse of ``b64`` (a ValueError for anything else)."""
    try:
        data = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError("not base64") from exc
    if b64(data) != text:
        raise ValueError("not canonical base64")
    return data


def data_url(mime_type: str, data: bytes) -> str:
    """``data:<mime>;base64,<data>``."""
    return f"data:{mime_type};base64,{b64(data)}"


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """``(mime_type, bytes)`` of a canonical base64 data URL, else None."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    head, _, payload = url[5:].partition(";base64,")
    try:
        return head, unb64(payload)
    except ValueError:
        return None


def guess_mime(url: str, kind: str) -> str:
    """The mime type a URL's extension suggests, else ``<kind>/*``."""
    guess = mimetypes.guess_type(url, strict=False)[0]
    return guess or f"{kind}/*"


def kind_of(mime_type: str) -> str:
    """``image``, ``audio``, ``video`` or ``file``, from the mime type's top level."""
    top = mime_type.split("/", 1)[0].lower()
    return top if top in ("image", "audio", "video") else "file"


def info_for(media: Media, natural: Media) -> dict[str, Any]:
    """What ``natural`` (read back from the format's part) got wrong about ``media``."""
    if media.data != natural.data:
        if isinstance(media.data, bytes):
            raise ValueError("the part does not carry these bytes")
        info: dict[str, Any] = {"uri": media.data}
    else:
        info = {}
    for f in _FIELDS:
        if getattr(media, f) != getattr(natural, f):
            info[f] = getattr(media, f)
    return info


def apply_info(natural: Media, info: Mapping[str, Any] | None) -> Media:
    """``natural`` corrected by a record made by ``info_for``."""
    if not info:
        return natural
    return Media(
        mime_type=info.get("mime_type", natural.mime_type),
        data=info.get("uri", natural.data),
        id=info.get("id", natural.id),
        name=info.get("name", natural.name),
    )


def encode_media(
    media: tuple[Media, ...], to_part: Callable[[Media], Any], from_part: Callable[[Any], Media]
) -> tuple[list[Any], list[dict[str, Any]] | None]:
    """Parts for ``media`` plus the per-media corrections (None when none is needed)."""
    parts = [to_part(m) for m in media]
    infos = [info_for(m, from_part(p)) for m, p in zip(media, parts, strict=True)]
    return parts, (infos if any(infos) else None)


def decode_media(
    parts: list[Any], infos: object, from_part: Callable[[Any], Media]
) -> tuple[Media, ...]:
    """Inverse of ``encode_media``."""
    if infos is not None and (not isinstance(infos, list) or len(infos) != len(parts)):
        raise ValueError("media corrections do not match the parts")
    fixes: list[Any] = infos if isinstance(infos, list) else [None] * len(parts)
    return tuple(apply_info(from_part(p), fix) for p, fix in zip(parts, fixes, strict=True))

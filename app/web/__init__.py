"""``icefloe ui``: a web dashboard over what ``status``, ``tables``, ``history`` and the stored
skew reports read (``data.py``), served by the standard library (``server.py``) with plain
HTML, CSS and JavaScript from ``static/`` (charts drawn as inline SVG; no CDN, no build)."""

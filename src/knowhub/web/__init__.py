"""The web face: the browser console at ``/`` and the offline API docs at ``/docs``/``/redoc``.

Everything a browser loads is served from this package (``web/static``): the console's
own HTML, CSS and JavaScript and the vendored Swagger UI and ReDoc bundles (see
``web/static/vendor/README.md`` for their versions and licences). The console is a plain
client of the public HTTP API: it holds no server-side state and calls only ``/api/...``,
``/health`` and ``/ready``, so it sees exactly what the HTTP API shows its principal.
"""

from knowhub.web.console import STATIC_DIR, install_web

__all__ = ["STATIC_DIR", "install_web"]

"""Routes of the web face: static assets, the console page and same-origin API docs.

None of these routes is part of the API schema (``include_in_schema=False``): they serve
files, not JSON, and need no key (the console page asks for one and sends it on each API
call). FastAPI's own ``/docs`` and ``/redoc`` load Swagger UI and ReDoc from a CDN, which
leaves them blank offline; :func:`install_web` serves both from the vendored copies instead.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

#: Files served under :data:`STATIC_URL`.
STATIC_DIR = Path(__file__).resolve().parent / "static"
STATIC_URL = "/static"
_VENDOR = f"{STATIC_URL}/vendor"
_FAVICON = f"{STATIC_URL}/console/favicon.svg"
#: Headers of the console page: no inline framing, no third-party origins, never cached
#: (a new release is picked up on reload).
_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
}


#: Policies of the docs pages: their bundles come from this server; inline code is the
#: page's own bootstrap (Swagger UI) and injected styles; images and API calls stay on this
#: origin, so ReDoc's vendor logo (a CDN image it hides when it fails) is never fetched.
_DOCS_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; "
)
_SWAGGER_HEADERS = {"Content-Security-Policy": _DOCS_POLICY + "script-src 'self' 'unsafe-inline'"}
_REDOC_HEADERS = {"Content-Security-Policy": _DOCS_POLICY + "script-src 'self'"}


def _with_headers(response: HTMLResponse, headers: dict[str, str]) -> HTMLResponse:
    response.headers.update(headers)
    return response


def install_web(app: FastAPI, *, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Add the console at ``/``, its assets under ``/static`` and offline ``/docs``/``/redoc``.

    The app must be built with ``docs_url=None, redoc_url=None`` so these routes replace
    FastAPI's CDN-backed pages.
    """
    app.mount(STATIC_URL, StaticFiles(directory=STATIC_DIR), name="static")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect = f"{docs_url}/oauth2-redirect"

    @app.get("/", include_in_schema=False)
    def console_page() -> FileResponse:
        """The console (a static page; all data comes from the API it calls)."""
        return FileResponse(STATIC_DIR / "console" / "index.html", headers=_PAGE_HEADERS)

    @app.get(docs_url, include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        """Swagger UI from the vendored bundle."""
        page = get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API",
            swagger_js_url=f"{_VENDOR}/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url=f"{_VENDOR}/swagger-ui/swagger-ui.css",
            swagger_favicon_url=_FAVICON,
            oauth2_redirect_url=oauth2_redirect,
            swagger_ui_parameters={"validatorUrl": None},
        )
        return _with_headers(page, _SWAGGER_HEADERS)

    @app.get(oauth2_redirect, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    def redoc() -> HTMLResponse:
        """ReDoc from the vendored bundle, without Google Fonts."""
        page = get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API reference",
            redoc_js_url=f"{_VENDOR}/redoc/redoc.standalone.js",
            redoc_favicon_url=_FAVICON,
            with_google_fonts=False,
        )
        return _with_headers(page, _REDOC_HEADERS)


__all__ = ["STATIC_DIR", "STATIC_URL", "install_web"]

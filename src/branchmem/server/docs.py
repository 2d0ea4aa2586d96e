"""``/docs`` and ``/redoc`` that work with no network.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so offline (an air-gapped host, a
laptop on a train) they are blank. Here the pages reference only this server's paths, and
the assets come from the ``fastapi-offline`` package, which bundles the Swagger UI and ReDoc
distributions (Apache-2.0 and MIT) and is part of the ``server`` extra.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

from .problems import Refusal

ASSETS_PATH: Final = "/docs/assets"
ASSETS: Final = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
BUNDLE: Final = "fastapi_offline"
# ReDoc's sidebar footer ("API docs by Redocly") loads its logo from this CDN address, with
# no option to turn it off. The bundle is served with the address replaced by an empty
# ``data:`` URL: the image fails to decode, ReDoc's onError drops it, and the page asks
# nothing of any other host.
REDOC_LOGO: Final = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
NO_IMAGE: Final = b"data:,"


def install_offline_docs(app: FastAPI) -> None:
    """Serve ``/docs`` (Swagger UI) and ``/redoc`` from bundled assets; build the app with
    ``docs_url=None, redoc_url=None`` so FastAPI's CDN pages are not registered first."""
    openapi_url = app.openapi_url or "/openapi.json"
    favicon = f"{ASSETS_PATH}/favicon.png"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} — API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=favicon,
            swagger_ui_parameters={"validatorUrl": None},  # no badge from validator.swagger.io
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} — API",
            redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=favicon,
            with_google_fonts=False,
        )

    @app.get(ASSETS_PATH + "/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        if name not in ASSETS:
            raise Refusal("not_found", f"no docs asset {name!r}")
        try:
            folder = resources.files(BUNDLE) / "static"
        except ModuleNotFoundError as missing:
            raise Refusal(
                "not_found",
                f"the docs assets come with the server extra ({missing.name} is missing): "
                'pip install "branchmem[server]"',
            ) from missing
        if name == "redoc.standalone.js":
            return Response(redoc_bundle(str(folder / name)), media_type=ASSETS[name])
        return FileResponse(str(folder / name), media_type=ASSETS[name])


@functools.cache
def redoc_bundle(path: str) -> bytes:
    """ReDoc's script without its one request to a CDN (read once: about 1 MB)."""
    with open(path, "rb") as handle:
        return handle.read().replace(REDOC_LOGO, NO_IMAGE)

"""One router module per engine; each exposes ``build_router() -> APIRouter``."""

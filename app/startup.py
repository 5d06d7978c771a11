"""What every entry point builds from the settings before it serves, once per process: the model
factory (its limiters shared through Redis when the deployment has one) and the research tools
(their limiters likewise). Both are checked as they are built, so a misconfiguration fails here
with a `ConfigError`, before anything listens or runs. The process's Redis adapter is made here
too, its outages reported to the metrics, and handed to every user of that Redis."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from app.backends.model_limiter_redis import redis_model_limiters
from app.backends.redis import SharedRedis, shared_redis
from app.backends.tool_limiter_redis import redis_limiters
from app.observability.metrics import PrometheusHealth
from app.settings import Settings
from calls.models import SettingsModelFactory
from calls.ratelimit import LimiterSource, model_limiter
from tools import mcp
from tools.registry import build_tools
from tools.runtime import ToolLimiters


def redis(settings: Settings) -> SharedRedis | None:
    """The process's adapter for the deployment's Redis (None without one), its outages
    reported to the metrics."""
    if not settings.redis_url:
        return None
    return shared_redis(settings.redis_url, observer=PrometheusHealth)


def model_limiters(settings: Settings) -> LimiterSource:
    """The models' limiters: shared through Redis when the deployment has one, else the
    process's own."""
    if not settings.redis_url:
        return model_limiter
    return redis_model_limiters(
        settings.redis_url, call_timeout_s=settings.model_timeout_s, redis=redis(settings)
    )


def model_factory(settings: Settings) -> SettingsModelFactory:
    """Every role's model built now (so a bad model string or a missing key fails here)."""
    factory = SettingsModelFactory(settings, limiters=model_limiters(settings))
    factory.check()
    return factory


def tool_limiters(settings: Settings) -> ToolLimiters | None:
    """The tools' rate limiters shared through Redis, or None for the process-wide ones."""
    if not settings.redis_url:
        return None
    return redis_limiters(settings.redis_url, redis=redis(settings))


def research_tools(settings: Settings) -> list[BaseTool]:
    """The enabled built-in tools (MCP servers' tools are loaded by `mcp_tools`, on the
    service's event loop)."""
    return build_tools(settings, limiters=tool_limiters(settings))


async def mcp_tools(settings: Settings) -> list[BaseTool]:
    """The tools of the MCP servers in `settings.mcp_servers` (none when unset)."""
    if not settings.mcp_servers:
        return []
    servers = mcp.parse_servers(settings.mcp_servers)
    return await mcp.load_mcp_tools(
        servers, timeout_s=settings.tool_timeout_s, max_chars=settings.tool_result_max_chars
    )

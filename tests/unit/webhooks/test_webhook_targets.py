"""Where webhooks may go: only hosts that are and resolve to public addresses."""

from __future__ import annotations

import pytest

from app.webhooks.targets import WebhookRefused, check_target


class _Resolver:
    """The network edge: answers every host with `addresses`, and notes what was asked."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = list(addresses)
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append((host, port))
        return self.addresses


async def _unresolvable(host: str, port: int) -> list[str]:
    raise OSError("Name or service not known")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://172.16.5.5/hook",
        "http://[fd00::5]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://100.64.0.1/hook",
    ],
)
async def test_a_loopback_link_local_or_private_address_is_refused(url: str) -> None:
    with pytest.raises(WebhookRefused, match="private"):
        await check_target(url, allow_private=False, resolve=_unresolvable)


async def test_a_name_resolving_to_any_private_address_is_refused() -> None:
    resolve = _Resolver("93.184.215.14", "10.0.0.7")
    with pytest.raises(WebhookRefused, match=r"10\.0\.0\.7"):
        await check_target("https://hooks.example.com/x", allow_private=False, resolve=resolve)
    assert resolve.asked == [("hooks.example.com", 443)]


async def test_a_name_resolving_to_public_addresses_is_accepted() -> None:
    resolve = _Resolver("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")
    await check_target("http://hooks.example.com:8080/x", allow_private=False, resolve=resolve)
    assert resolve.asked == [("hooks.example.com", 8080)]


async def test_a_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(WebhookRefused, match="does not resolve"):
        await check_target("https://nowhere.invalid/", allow_private=False, resolve=_unresolvable)


@pytest.mark.parametrize(
    "url", ["ftp://example.com/x", "http:///nohost", "http://a:99999/", "http://exa\x00mple.com/"]
)
async def test_only_http_urls_with_a_host_are_accepted(url: str) -> None:
    with pytest.raises(WebhookRefused):
        await check_target(url, allow_private=True, resolve=_unresolvable)


async def test_private_addresses_are_accepted_when_the_operator_allows_them() -> None:
    await check_target("http://127.0.0.1:9/x", allow_private=True, resolve=_unresolvable)


async def test_a_host_the_resolver_cannot_encode_is_refused_not_an_error() -> None:
    async def cannot_encode(host: str, port: int) -> list[str]:
        raise UnicodeError("label too long")

    with pytest.raises(WebhookRefused, match="does not resolve"):
        await check_target(
            "https://" + "a" * 70 + ".example/", allow_private=False, resolve=cannot_encode
        )

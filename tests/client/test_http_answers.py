"""What the HTTP client makes of answers that are not the API server's, as client-go's rest
client does (transformResponse): 200 to 206 are answers, anything else an error, and an error
whose body is not a Status (a proxy's plain-text 502, an HTML page) the Status
NewGenericServerResponse makes of its code and text, not a decoding failure. Against a stub
HTTP server on 127.0.0.1 that answers what each test tells it to."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.client.conftest import CONFIG_MAPS, config_map

from pinnace.api.status import StatusError
from pinnace.client.http import HTTPClient
from pinnace.client.kubelet import KubeletClient
from pinnace.clock import Clock


class Stub:
    """An HTTP server answering every request with one status, headers and body."""

    def __init__(self, status: str, body: bytes = b"", **headers: str) -> None:
        head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}"]
        head += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        self.answer = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        self.requests: list[str] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while head := await reader.readuntil(b"\r\n\r\n"):
            lines = head.decode("latin-1").split("\r\n")
            self.requests.append(lines[0])
            length = next(int(f.split(":")[1]) for f in lines if f.lower().startswith("content-l"))
            await reader.readexactly(length)
            writer.write(self.answer)
            await writer.drain()


def against(stub: Stub, scenario: Callable[[str], Awaitable[None]]) -> None:
    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await stub.serve(reader, writer)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            await asyncio.wait_for(scenario(f"http://127.0.0.1:{port}"), 20)
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(main())


def refusal(stub: Stub, request: Callable[[HTTPClient], Awaitable[Any]]) -> StatusError:
    """The error the client raises for what the stub answers to `request`."""
    raised: list[StatusError] = []

    async def scenario(url: str) -> None:
        client = HTTPClient(url, Clock(asyncio.get_running_loop()))
        try:
            with pytest.raises(StatusError) as e:
                await request(client)
            raised.append(e.value)
        finally:
            client.close()

    against(stub, scenario)
    return raised[0]


def get(client: HTTPClient) -> Awaitable[Any]:
    return client.get(CONFIG_MAPS, "default", "settings")


def test_a_proxys_plain_text_502_is_an_internal_error() -> None:
    stub = Stub("502 Bad Gateway", b"Bad Gateway\n", Content_Type="text/plain")
    error = refusal(stub, get)
    assert (error.code, error.reason, error.message) == (502, "InternalError",
        'an error on the server ("Bad Gateway") has prevented the request from succeeding '
        "(get configmaps settings)")  # fmt: skip
    assert error.details is not None
    assert error.details["causes"] == [{"reason": "UnexpectedServerResponse",
                                        "message": "Bad Gateway"}]  # fmt: skip


def test_an_html_503_keeps_its_code_reason_and_retry_after_but_not_its_page() -> None:
    page = b"<html><body>down for maintenance</body></html>"
    stub = Stub("503 Service Unavailable", page, Content_Type="text/html", Retry_After="7")
    error = refusal(stub, lambda client: client.create(CONFIG_MAPS, "default", config_map("c")))
    assert (error.code, error.reason, error.message) == (503, "ServiceUnavailable",
        "the server is currently unable to handle the request (post configmaps)")  # fmt: skip
    assert error.details is not None and error.details["retryAfterSeconds"] == 7
    binary = Stub("500 Internal Server Error", b"\x00\x01", Content_Type="application/octet-stream")
    assert refusal(binary, get).message == (
        'an error on the server ("unknown") has prevented the request from succeeding '
        "(get configmaps settings)"
    )


def test_a_redirect_is_an_error_and_a_status_body_is_taken_as_it_is() -> None:
    stub = Stub("302 Found", b"", Location="https://elsewhere/")
    error = refusal(stub, get)
    assert (error.code, error.reason) == (302, "")
    assert error.message == ("the server responded with the status code 302 but did not return "
                             "more information (get configmaps settings)")  # fmt: skip
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 409,
              "reason": "Conflict", "message": "the object has been modified"}  # fmt: skip
    conflict = Stub("409 Conflict", json.dumps(status).encode(), Content_Type="application/json")
    error = refusal(conflict, get)
    assert (error.code, error.reason) == (409, "Conflict")
    assert error.message == "the object has been modified"


def test_answers_from_200_to_206_are_answers() -> None:
    body = json.dumps(config_map("settings")).encode()

    async def scenario(url: str) -> None:
        client = HTTPClient(url, Clock(asyncio.get_running_loop()))
        try:
            assert (await get(client))["metadata"]["name"] == "settings"
        finally:
            client.close()

    against(Stub("206 Partial Content", body, Content_Type="application/json"), scenario)


def test_a_watch_refused_with_plain_text_is_the_status_error() -> None:
    async def watch(client: HTTPClient) -> None:
        async for _ in client.watch(CONFIG_MAPS, "default"):
            pass

    stub = Stub("504 Gateway Timeout", b"upstream timed out", Content_Type="text/plain")
    error = refusal(stub, watch)
    assert (error.code, error.reason) == (504, "Timeout")
    assert error.message == ("the server was unable to return a response in the time "
                             "allotted, but may still be processing the request "
                             "(get configmaps)")  # fmt: skip


def test_an_agent_answering_a_fault_with_plain_text_is_an_error_not_a_decoding_failure() -> None:
    async def scenario(url: str) -> None:
        port = int(url.rsplit(":", 1)[1])
        node = {"metadata": {"name": "far-1"},
                "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}  # fmt: skip
        with pytest.raises(StatusError) as e:
            await KubeletClient(lambda node: True).post(node, "/pinnace/faults/stop")
        assert (e.value.code, e.value.reason) == (502, "InternalError")
        assert e.value.message == (
            'an error on the server ("Bad Gateway") has prevented the request from succeeding'
        )

    against(Stub("502 Bad Gateway", b"Bad Gateway", Content_Type="text/plain"), scenario)

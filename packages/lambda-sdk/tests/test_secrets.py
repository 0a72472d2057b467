"""The API key, Jupyter tokens and generated private keys stay out of logs, reprs and exceptions."""

from __future__ import annotations

import logging

import pytest
from lambda_sdk import AuthError, LambdaClient


def test_debug_logs_and_reprs_never_show_secrets(lambda_clouds, make_client, launch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    key = lambda_clouds.endpoints["lambda"]["api_key"]
    client = make_client(lambda_clouds)
    with caplog.at_level(logging.DEBUG):  # every logger, urllib3's included
        op = launch(client, "logged")
        instance = op.result(timeout=60)
        generated = client.add_ssh_key("generated")
    assert any(r.name == "lambda_sdk" for r in caplog.records)
    logged = caplog.text
    assert key not in logged and "Bearer" not in logged
    assert instance.jupyter_token and instance.jupyter_token not in logged + repr(instance)
    assert generated.private_key not in logged + repr(generated)
    assert key not in repr(client) and key not in repr(client._transport)
    assert key not in repr(op)


def test_auth_errors_do_not_echo_the_key(lambda_clouds) -> None:
    url = lambda_clouds.endpoints["lambda"]["url"]
    client = LambdaClient("secret_should_not_leak", base_url=url, rate_limit=None)
    with client, pytest.raises(AuthError) as info:
        client.get_instance("0" * 32)
    text = str(info.value) + repr(info.value) + repr(vars(info.value))
    assert "secret_should_not_leak" not in text

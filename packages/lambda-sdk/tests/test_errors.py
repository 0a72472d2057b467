"""Error classification is a table lookup on (status, code); messages are never parsed."""

from __future__ import annotations

import pytest
import requests
from lambda_sdk import errors
from lambda_sdk.errors import error_class


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (401, "global/invalid-api-key", errors.AuthError),
        (403, "global/forbidden", errors.Forbidden),
        (403, "global/account-inactive", errors.Forbidden),
        (400, "global/invalid-parameters", errors.InvalidParameters),
        (404, "global/object-does-not-exist", errors.NotFound),
        (404, "global/not-found", errors.NotFound),
        (400, "instance-operations/launch/insufficient-capacity", errors.CapacityError),
        (400, "global/quota-exceeded", errors.QuotaError),
        (409, "global/conflict", errors.Conflict),
        (400, "global/duplicate", errors.Conflict),
        (400, "filesystems/filesystem-in-use", errors.Conflict),
        (429, "global/rate-limited", errors.RateLimited),
        (429, "", errors.RateLimited),
        (500, "global/internal-error", errors.ServerError),
        (503, "provider/internal-unavailable", errors.ServerError),
        (400, "provider/internal-unavailable", errors.ServerError),  # the spec gives no status: the code decides
        (409, "provider/internal-unavailable", errors.ServerError),
        (400, "provider/quota-exceeded", errors.QuotaError),
        (403, "provider/quota-exceeded", errors.QuotaError),
        (400, "provider/something-new", errors.APIError),  # an unknown provider code: the status decides
        (502, "", errors.ServerError),
        (404, "something/new", errors.NotFound),  # unknown code: the status decides
        (400, "global/unknown", errors.APIError),  # Lambda's catch-all: not a known kind of error
        (418, "", errors.APIError),
    ],
)
def test_error_class_table(status: int, code: str, expected: type[errors.APIError]) -> None:
    assert error_class(status, code) is expected


def test_a_message_mentioning_capacity_does_not_make_a_capacity_error() -> None:
    assert error_class(400, "global/invalid-parameters") is errors.InvalidParameters


def test_api_error_carries_every_field_and_prints_the_suggestion() -> None:
    exc = errors.CapacityError(
        "Not enough capacity to fulfill launch request.", status=400,
        code="instance-operations/launch/insufficient-capacity", suggestion="Try again later.",
        request_id="r-1", method="POST", url="http://x/api/v1/instance-operations/launch",
    )
    assert (exc.status, exc.code, exc.request_id, exc.method) == (400, exc.code, "r-1", "POST")
    text = str(exc)
    assert "400 instance-operations/launch/insufficient-capacity" in text
    assert "Suggestion: Try again later." in text and exc.url in text


def test_hierarchy() -> None:
    assert issubclass(errors.ReservedInstanceError, errors.Forbidden)
    assert issubclass(errors.RequestNotSent, errors.TransportError)
    assert issubclass(errors.ResponseNotReceived, errors.TransportError)
    for cls in (errors.APIError, errors.TransportError, errors.OperationFailed, errors.OperationTimeout,
                errors.PaginationLoop):
        assert issubclass(cls, errors.LambdaError)
    assert not issubclass(errors.RequestNotSent, errors.APIError)


class _Answers:
    """A requests session stand-in (the client's `session=`) answering a list of (status, body) in turn."""

    def __init__(self, *answers: tuple[int, bytes]) -> None:
        self.answers, self.paths = list(answers), []

    def request(self, method: str, url: str, **kwargs: object) -> requests.Response:
        self.paths.append(f"{method} {url.rsplit('/api/v1', 1)[-1]}")
        response = requests.Response()
        response.status_code, response._content = self.answers.pop(0)
        return response

    def close(self) -> None:
        """Nothing to close."""


PROVIDER_UNAVAILABLE = (b'{"error": {"code": "provider/internal-unavailable", "message": "Provider unavailable", '
                        b'"suggestion": "Try again shortly"}}')


@pytest.mark.parametrize("status", [400, 409, 503])
def test_provider_unavailable_is_a_server_error_retried_whatever_its_status(status: int) -> None:
    """Spec 1.10 (info, "Provider errors"; research lambda.md section 6, real-clouds.md Part 3 finding 4):
    `provider/internal-unavailable` says "Try again shortly" and has no documented status. A read that gets it
    is sent again and succeeds."""
    from lambda_sdk import LambdaClient, RetryPolicy

    wire = _Answers((status, PROVIDER_UNAVAILABLE), (200, b'{"data": []}'))
    client = LambdaClient("k", base_url="http://lambda.test/api/v1", session=wire, rate_limit=None,  # type: ignore[arg-type]
                          retry=RetryPolicy(initial=0.0, maximum=0.0, max_attempts=2))
    assert list(client.list_regions()) == []
    assert wire.paths == ["GET /regions", "GET /regions"]


def test_a_launch_refused_by_a_provider_quota_is_a_quota_error_and_not_sent_again() -> None:
    """Spec 1.10 lists "quota limitations" among provider errors; `provider/quota-exceeded` (a third-party
    client's table) is a QuotaError, as `global/quota-exceeded` is: the launch is not repeated."""
    from lambda_sdk import LambdaClient, QuotaError, RetryPolicy

    body = b'{"error": {"code": "provider/quota-exceeded", "message": "Provider quota exceeded"}}'
    wire = _Answers((400, body))
    client = LambdaClient("k", base_url="http://lambda.test/api/v1", session=wire, rate_limit=None,  # type: ignore[arg-type]
                          retry=RetryPolicy(initial=0.0, maximum=0.0, max_attempts=3))
    with pytest.raises(QuotaError) as err:
        client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10", ssh_key_names=["k"])
    assert err.value.code == "provider/quota-exceeded" and wire.paths == ["POST /instance-operations/launch"]

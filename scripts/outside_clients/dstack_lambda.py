"""dstack 0.22.5's Lambda backend (`dstack/_internal/core/backends/lambdalabs`) with gpuhunt 0.1.34, against the
Lambda mock.

Calls: gpuhunt's Lambda catalog (GET /images then GET /instance-types, back to back, no 429 handling),
`LambdaCompute.get_all_offers_with_availability` (GET /instance-types), `create_instance` (GET /ssh-keys,
POST /ssh-keys, POST launch: three calls in a row, no retry), the server's `update_provisioning_data` loop
(GET /instances until the VM is no longer booting), `terminate_instance`, and GET /instances until it is gone.

Patched: the hosts (`api_client.API_URL`, gpuhunt's `IMAGES_URL` and `INSTANCE_TYPES_URL`), the published catalog
(`_dstack.offline_catalog`), and `compute._start_runner`, which SSHes into the VM to start dstack's shim (no API
call; the mock's addresses route nowhere).
"""

from __future__ import annotations

from _dstack import instance_config, offline_catalog, pause, pick, provisioned, validate_backend
from _report import HttpLog, Report, endpoints, wait_until

REGION = "us-east-1"
TYPE = "gpu_1x_a10"


def main() -> int:
    report = Report("dstack, Lambda")
    http = HttpLog()
    lam = endpoints()["lambda"]
    url, key = lam["url"], lam["api_key"]

    import gpuhunt.providers.lambdalabs as gpuhunt_lambda
    from dstack._internal.core.backends.lambdalabs import api_client, compute
    from dstack._internal.core.backends.lambdalabs.configurator import LambdaConfigurator
    from dstack._internal.core.backends.lambdalabs.models import (
        LambdaAPIKeyCreds,
        LambdaBackendConfigWithCreds,
        LambdaConfig,
    )

    api_client.API_URL = url
    gpuhunt_lambda.IMAGES_URL = f"{url}/images"
    gpuhunt_lambda.INSTANCE_TYPES_URL = f"{url}/instance-types"
    compute._start_runner = lambda **_: None

    validate_backend(report, LambdaConfigurator(),
                     LambdaBackendConfigWithCreds(creds=LambdaAPIKeyCreds(api_key=key)),
                     LambdaBackendConfigWithCreds(creds=LambdaAPIKeyCreds(api_key="secret_wrong_key")))
    pause()
    items = report.run("gpuhunt LambdaLabsProvider.get (GET /images, GET /instance-types)",
                       lambda: gpuhunt_lambda.LambdaLabsProvider(key).get(), lambda i: f"{len(i)} catalog items")
    offline_catalog("lambdalabs", items or [])
    pause()
    lambda_compute = compute.LambdaCompute(LambdaConfig(creds=LambdaAPIKeyCreds(api_key=key)))
    offers = report.run("get_all_offers_with_availability (GET /instance-types)",
                        lambda: lambda_compute.get_all_offers_with_availability(False),
                        lambda o: f"{len(o)} offers, {sum(x.availability.is_available() for x in o)} available")
    offer = report.run(f"offer {TYPE} in {REGION} is available",
                       lambda: pick(offers or [], TYPE, REGION), lambda o: f"{o.availability.value}, ${o.price}/h")
    if offer is not None and not offer.availability.is_available():
        report.check(f"offer {TYPE} in {REGION} is available", False, offer.availability.value)
    pause()
    data = report.run("create_instance (GET /ssh-keys, POST /ssh-keys, POST launch)",
                      lambda: lambda_compute.create_instance(offer, instance_config("oc-dstack-lambda"), None),
                      lambda d: d.instance_id) if offer else None
    if data is not None:
        report.run("update_provisioning_data until active (GET /instances)",
                   lambda: provisioned(lambda_compute, data), str)
        pause()
        report.run("terminate_instance (POST terminate)",
                   lambda: lambda_compute.terminate_instance(data.instance_id, REGION, None), lambda _: "sent")

        def gone() -> str:
            alive = {"booting", "active", "unhealthy", "terminating"}
            wait_until(lambda: not [i for i in lambda_compute.api_client.list_instances()
                                    if i["id"] == data.instance_id and i["status"] in alive], 120, 1)
            return "gone from GET /instances"

        report.run("wait until gone", gone, str)
    report.info("HTTP answers seen", http.summary())
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

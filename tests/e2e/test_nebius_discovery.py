"""A Nebius profile as a real user has it (a token and the default project, no region map, no subnet), through the real
`vm` executable against the local mock clouds: regions and subnets come from the API (IAM ProjectService, VPC
SubnetService), as dstack and SkyPilot read them."""

from __future__ import annotations

from .conftest import VmHome


def test_a_profile_with_only_a_token_and_project_id(fresh_home: VmHome) -> None:
    """`nebius profile create` writes an endpoint and a `parent-id` only (pysdk's config reader); the tenant's
    projects carry their regions (nebius/api iam/v1/container.proto `status.region`) and each project its
    default-subnet... (docs.nebius.com/vpc/overview)."""
    fresh_home.ok("providers")  # starts the local mock clouds
    endpoint = fresh_home.endpoints()["nebius"]
    fresh_home.config(f"""
[profiles.mine.nebius]
token = "{endpoint['token']}"
endpoint = "{endpoint['target']}"
project_id = "{endpoint['project_id']}"
time_scale = 0.002
""")
    offers = fresh_home.ok("--profile", "mine", "offers", "--gpu", "H200", "-o", "json").json()
    assert {o["region"] for o in offers} == {"eu-north1", "eu-west1", "us-central1"}
    made = fresh_home.ok("--profile", "mine", "--debug", "create", "-p", "nebius", "--gpu", "H200", "--region",
                         "eu-west1", "--name", "paris", "-o", "json")
    vm = made.json()
    assert (vm["region"], vm["state"]) == ("eu-west1", "running")
    assert "Nebius tenant tenant-e00a1b2c3d4e5f6g7h: eu-north1=project-e00" in made.err  # what was found, said
    assert "new instances use subnet vpcsubnet-e01" in made.err
    listed = fresh_home.ok("--profile", "mine", "list", "-o", "json").json()
    assert [(i["name"], i["region"]) for i in listed] == [("paris", "eu-west1")]
    refused = fresh_home("--profile", "mine", "create", "-p", "nebius", "--gpu", "H200", "--region", "us-east1",
                         "--name", "nowhere", "-o", "json")
    assert refused.code == 2 and refused.error()["message"].startswith("nebius offers no H200:1 in region 'us-east1'")
    fresh_home.ok("--profile", "mine", "destroy", vm["id"], "-p", "nebius", "-y")
    assert fresh_home.live("paris") == []

"""Mock of the Nebius AI Cloud compute API (gRPC, `compute.api.nebius.cloud:443`).

Serves `nebius.compute.v1.InstanceService`, `nebius.compute.v1.PlatformService`,
`nebius.common.v1.OperationService`, IAM's `nebius.iam.v1.TokenExchangeService` and `nebius.iam.v1.ProjectService`,
and VPC's `nebius.vpc.v1.SubnetService` on one port, over the shared simulation core (`mock_clouds.core`).
Messages come from `_pb/` (generated from `/protos` with betterproto2); see `server.serve`.
"""

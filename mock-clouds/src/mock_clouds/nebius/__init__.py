"""Mock of the Nebius AI Cloud compute API (gRPC, `compute.api.nebius.cloud:443`).

Serves `nebius.compute.v1.InstanceService`, `nebius.compute.v1.PlatformService`,
`nebius.common.v1.OperationService` and IAM's `nebius.iam.v1.TokenExchangeService` on one port, over the
shared simulation core (`mock_clouds.core`). Messages come from `_pb/` (generated from `/protos` with
betterproto2); see `server.serve`.
"""

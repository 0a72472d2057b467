"""Mock of the Lambda Cloud public REST API (`/api/v1`, spec 1.10; facts in research/lambda.md).

Modules: `app` (routing, auth, rate limits), `instances` and `resources` (endpoints), `models` (request
bodies), `render` (wire shapes), `errors` (error envelopes), `state` (keys, file systems, launch details),
`keys` (SSH key generation), `testing` (a wire client for test suites).

Mock extensions, each marked where it is implemented:
- `GET /reservations` and the launch field `reservation_id` (reserved capacity has no public API); reserved
  instances report `actions.terminate.reason_code = "vm-is-reserved"` and terminating them is refused with 403
  `global/forbidden`.
- 429 bodies use the invented code `global/rate-limited`; `Retry-After` (whole seconds) plus `retry-after-ms`.
- Texts of errors whose wording is undocumented (unknown launch resources, reservation errors, duplicates).
- Generated SSH keys are Ed25519 in OpenSSH format (Lambda's example shows an RSA PEM key).
"""

module outside-clients/clientgo

go 1.17

require (
	github.com/antihax/optional v1.0.0
	github.com/crusoecloud/client-go v1.0.3
)

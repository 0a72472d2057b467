// Command clientgo drives Crusoe's official Go client (github.com/crusoecloud/client-go: its generated
// swagger/v1alpha5 client and its own request signer, auth.NewAuthenticatedAPIClient) against the Crusoe mock.
//
// The only change is the client's BasePath, set to the mock's URL (the client's default is
// https://api.crusoecloud.com/v1alpha5). It reads the mock's endpoints.json (OC_ENDPOINTS) and appends one JSON
// line per call to OC_RESULTS, in the format of ../_report.py: {client, call, result PASS|FAIL|INFO, detail}.
// Exit status 1 when any call failed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/antihax/optional"
	"github.com/crusoecloud/client-go/auth"
	swagger "github.com/crusoecloud/client-go/swagger/v1alpha5"
)

const (
	client       = "Crusoe client-go"
	vmType       = "l40s-48gb.1x"
	location     = "eu-iceland1-a"
	image        = "ubuntu22.04:latest"
	ibType       = "h100-80gb-sxm-ib.8x"
	ibLocation   = "us-east1-a"
	publicKey    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f clientgo@outside-clients"
	opTimeout    = 120 * time.Second
	pollInterval = 500 * time.Millisecond
)

var failed int

func record(call, result, detail string) {
	if len(detail) > 400 {
		detail = detail[:400]
	}
	fmt.Fprintf(os.Stderr, "[%s] %-4s %s: %s\n", client, result, call, detail)
	if result == "FAIL" {
		failed++
	}
	path := os.Getenv("OC_RESULTS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]string{"client": client, "call": call, "result": result, "detail": detail})
	f.Write(append(line, '\n'))
}

// describe turns a client error into text: the HTTP status and the API's error body.
func describe(err error, resp *http.Response) string {
	status := ""
	if resp != nil {
		status = resp.Status + ": "
	}
	var swaggerErr swagger.GenericSwaggerError
	if errors.As(err, &swaggerErr) {
		return status + string(swaggerErr.Body())
	}
	return status + err.Error()
}

// check records PASS with detail when err is nil, else FAIL; it returns whether the call passed.
func check(call string, err error, resp *http.Response, detail string) bool {
	if err != nil {
		record(call, "FAIL", describe(err, resp))
		return false
	}
	record(call, "PASS", detail)
	return true
}

type api struct {
	c       *swagger.APIClient
	ctx     context.Context
	project string
}

// wait polls a VM or disk operation until it leaves IN_PROGRESS.
func (a api) wait(op *swagger.Operation, get func(string) (swagger.Operation, *http.Response, error)) (swagger.Operation, error) {
	if op == nil {
		return swagger.Operation{}, errors.New("response without an operation")
	}
	deadline := time.Now().Add(opTimeout)
	current := *op
	for current.State == "IN_PROGRESS" {
		if time.Now().After(deadline) {
			return current, fmt.Errorf("operation %s still IN_PROGRESS", current.OperationId)
		}
		time.Sleep(pollInterval)
		next, resp, err := get(current.OperationId)
		if err != nil {
			return current, errors.New(describe(err, resp))
		}
		current = next
	}
	if current.State != "SUCCEEDED" {
		result, _ := json.Marshal(current.Result)
		return current, fmt.Errorf("operation %s %s: %s", current.OperationId, current.State, result)
	}
	return current, nil
}

func (a api) vmOp(id string) (swagger.Operation, *http.Response, error) {
	return a.c.VMOperationsApi.GetComputeVMsInstancesOperation(a.ctx, a.project, id)
}

func (a api) diskOp(id string) (swagger.Operation, *http.Response, error) {
	return a.c.DiskOperationsApi.GetStorageDisksOperation(a.ctx, a.project, id)
}

func (a api) vmAction(call, vmID, action, wantState string) {
	res, resp, err := a.c.VMsApi.UpdateInstance(a.ctx, swagger.InstancesPatchRequestV1Alpha5{Action: action}, a.project, vmID)
	if err == nil {
		_, err = a.wait(res.Operation, a.vmOp)
	}
	if !check(call+" (PATCH action "+action+", operation)", err, resp, "operation SUCCEEDED") {
		return
	}
	vm, resp, err := a.c.VMsApi.GetInstance(a.ctx, a.project, vmID)
	if err == nil && vm.State != wantState {
		err = fmt.Errorf("state %s, want %s", vm.State, wantState)
	}
	check("GetInstance after "+action, err, resp, vm.State)
}

func main() {
	raw, err := os.ReadFile(os.Getenv("OC_ENDPOINTS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientgo: OC_ENDPOINTS:", err)
		os.Exit(2)
	}
	var endpoints struct {
		Crusoe struct {
			URL            string `json:"url"`
			AccessKeyID    string `json:"access_key_id"`
			SecretKey      string `json:"secret_key"`
			ProjectID      string `json:"project_id"`
			ProjectName    string `json:"project_name"`
			OrganizationID string `json:"organization_id"`
		} `json:"crusoe"`
	}
	if err := json.Unmarshal(raw, &endpoints); err != nil {
		fmt.Fprintln(os.Stderr, "clientgo: endpoints.json:", err)
		os.Exit(2)
	}
	e := endpoints.Crusoe
	c := auth.NewAuthenticatedAPIClient(e.AccessKeyID, e.SecretKey)
	c.ChangeBasePath(e.URL)
	a := api{c: c, ctx: context.Background(), project: e.ProjectID}
	run(a, e.OrganizationID, e.ProjectName)
	if failed > 0 {
		os.Exit(1)
	}
}

func run(a api, org, projectName string) {
	ctx, c := a.ctx, a.c
	projects, resp, err := c.ProjectsApi.ListProjects(ctx, &swagger.ProjectsApiListProjectsOpts{ProjectName: optional.NewString(projectName)})
	if err == nil && (len(projects.Items) != 1 || projects.Items[0].Id != a.project) {
		err = fmt.Errorf("project %q resolved to %+v", projectName, projects.Items)
	}
	check("ListProjects ?project_name= (name -> id, as Terraform resolves it)", err, resp, a.project)
	project, resp, err := c.ProjectsApi.GetProject(ctx, a.project)
	check("GetProject", err, resp, project.Name+" in org "+project.OrganizationId)
	locations, resp, err := c.LocationsApi.ListLocations(ctx)
	check("ListLocations", err, resp, strings.Join(locations.Items, ","))
	capacities, resp, err := c.CapacitiesApi.ListSliceCapacities(ctx, &swagger.CapacitiesApiListSliceCapacitiesOpts{})
	check("ListSliceCapacities", err, resp, fmt.Sprintf("%d rows", len(capacities.Items)))
	types, resp, err := c.VMsApi.GetVMTypes(ctx, a.project)
	check("GetVMTypes", err, resp, fmt.Sprintf("%d types", len(types.Items)))
	quotas, resp, err := c.QuotasApi.ListProjectQuotas(ctx, a.project)
	check("ListProjectQuotas", err, resp, fmt.Sprintf("%d quotas", len(quotas.Quotas)))
	orgQuotas, resp, err := c.QuotasApi.ListOrgQuotas(ctx, org)
	check("ListOrgQuotas", err, resp, fmt.Sprintf("%d quotas", len(orgQuotas.Quotas)))
	reservations, resp, err := c.ReservationsApi.GetReservations(ctx, org, &swagger.ReservationsApiGetReservationsOpts{})
	check("GetReservations (organization)", err, resp, fmt.Sprintf("%d reservations", len(reservations.Items)))
	images, resp, err := c.ImagesApi.ListImages(ctx, &swagger.ImagesApiListImagesOpts{})
	check("ListImages", err, resp, fmt.Sprintf("%d images", len(images.Items)))
	networks, resp, err := c.VPCNetworksApi.ListVPCNetworks(ctx, a.project)
	check("ListVPCNetworks", err, resp, fmt.Sprintf("%d networks", len(networks.Items)))
	subnets, resp, err := c.VPCSubnetsApi.ListVPCSubnets(ctx, a.project)
	check("ListVPCSubnets", err, resp, fmt.Sprintf("%d subnets", len(subnets.Items)))

	created, resp, err := c.SSHKeysApi.CreateSSHKey(ctx, swagger.CreateSshKeyRequest{Name: "oc-clientgo", PublicKey: publicKey})
	keyID := ""
	if err == nil && created.SshKey == nil {
		err = errors.New("response without ssh_key")
	} else if err == nil {
		keyID = created.SshKey.Id
	}
	check("CreateSSHKey", err, resp, keyID)
	keys, resp, err := c.SSHKeysApi.GetSSHKeys(ctx)
	check("GetSSHKeys", err, resp, fmt.Sprintf("%d keys", len(keys.Items)))

	vmID := lifecycle(a)
	disks(a, vmID)
	ib(a)
	if vmID != "" {
		res, resp, err := c.VMsApi.DeleteInstance(ctx, a.project, vmID)
		if err == nil {
			_, err = a.wait(res.Operation, a.vmOp)
		}
		check("DeleteInstance (operation)", err, resp, "operation SUCCEEDED")
		deadline := time.Now().Add(opTimeout)
		for {
			_, resp, err = c.VMsApi.GetInstance(ctx, a.project, vmID)
			if resp != nil && resp.StatusCode == http.StatusNotFound || time.Now().After(deadline) {
				break
			}
			time.Sleep(pollInterval)
		}
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			record("GetInstance until 404 (gone)", "PASS", describe(err, resp))
		} else {
			record("GetInstance until 404 (gone)", "FAIL", "still there")
		}
	}
	if keyID != "" {
		resp, err := c.SSHKeysApi.DeleteSSHKey(ctx, keyID)
		check("DeleteSSHKey", err, resp, "deleted")
	}
	_, resp, err = c.VMsApi.GetInstance(ctx, a.project, "00000000-0000-4000-8000-000000000000")
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		record("GetInstance of an unknown id", "INFO", "404, body decoded: "+describe(err, resp))
	} else {
		record("GetInstance of an unknown id", "FAIL", fmt.Sprintf("want 404, got %v", describe(err, resp)))
	}
}

func lifecycle(a api) string {
	ctx, c := a.ctx, a.c
	body := swagger.InstancesPostRequestV1Alpha5{Name: "oc-clientgo-vm", Type_: vmType, Location: location,
		Image: image, SshPublicKey: publicKey}
	res, resp, err := c.VMsApi.CreateInstance(ctx, body, a.project)
	var op swagger.Operation
	if err == nil {
		op, err = a.wait(res.Operation, a.vmOp)
	}
	if !check("CreateInstance (POST, operation until SUCCEEDED)", err, resp, op.OperationId) {
		return ""
	}
	meta, _ := json.Marshal(op.Metadata)
	var ids struct {
		ID string `json:"id"`
	}
	json.Unmarshal(meta, &ids)
	if ids.ID == "" {
		result, _ := json.Marshal(op.Result)
		json.Unmarshal(result, &ids)
	}
	vm, resp, err := c.VMsApi.GetInstance(ctx, a.project, ids.ID)
	if err == nil && vm.State != "STATE_RUNNING" {
		err = fmt.Errorf("state %s", vm.State)
	}
	addr := ""
	if len(vm.NetworkInterfaces) > 0 && len(vm.NetworkInterfaces[0].Ips) > 0 && vm.NetworkInterfaces[0].Ips[0].PublicIpv4 != nil {
		addr = vm.NetworkInterfaces[0].Ips[0].PublicIpv4.Address
	}
	check("GetInstance (running, public IPv4)", err, resp, vm.State+" "+addr)
	listed, resp, err := c.VMsApi.ListInstances(ctx, a.project, &swagger.VMsApiListInstancesOpts{Ids: optional.NewString(vm.Id)})
	if err == nil && (len(listed.Items) != 1 || listed.Items[0].Id != vm.Id) {
		err = fmt.Errorf("ids= listing gave %d items", len(listed.Items))
	}
	check("ListInstances ?ids=", err, resp, "1 item")
	ops, resp, err := c.VMOperationsApi.ListComputeVMsInstancesOperations(ctx, a.project, &swagger.VMOperationsApiListComputeVMsInstancesOperationsOpts{})
	check("ListComputeVMsInstancesOperations", err, resp, fmt.Sprintf("%d operations", len(ops.Items)))
	a.vmAction("stop", vm.Id, "STOP", "STATE_SHUTOFF")
	a.vmAction("start", vm.Id, "START", "STATE_RUNNING")
	return vm.Id
}

// attached reports whether the VM lists the disk among its disks.
func (a api) attached(vmID, diskID string) (bool, *http.Response, error) {
	vm, resp, err := a.c.VMsApi.GetInstance(a.ctx, a.project, vmID)
	for _, d := range vm.Disks {
		if d.Id == diskID {
			return true, resp, err
		}
	}
	return false, resp, err
}

func disks(a api, vmID string) {
	ctx, c := a.ctx, a.c
	res, resp, err := c.DisksApi.CreateDisk(ctx, swagger.DisksPostRequestV1Alpha5{Name: "oc-clientgo-disk", Size: "100GiB",
		Location: location, Type_: "persistent-ssd"}, a.project)
	var op swagger.Operation
	if err == nil {
		op, err = a.wait(res.Operation, a.diskOp)
	}
	if !check("CreateDisk (operation)", err, resp, op.OperationId) {
		return
	}
	meta, _ := json.Marshal(op.Metadata)
	var ids struct {
		ID string `json:"id"`
	}
	json.Unmarshal(meta, &ids)
	disk, resp, err := c.DisksApi.GetDisk(ctx, a.project, ids.ID)
	check("GetDisk", err, resp, disk.Id+" "+disk.Size)
	list, resp, err := c.DisksApi.ListDisks(ctx, a.project, &swagger.DisksApiListDisksOpts{})
	check("ListDisks", err, resp, fmt.Sprintf("%d disks", len(list.Items)))
	if vmID != "" {
		attach := swagger.InstancesAttachDiskPostRequestV1Alpha5{AttachDisks: []swagger.DiskAttachment{
			{DiskId: ids.ID, Mode: "read-write", AttachmentType: "data"}}}
		res, resp, err := c.VMsApi.UpdateInstanceAttachDisks(ctx, attach, a.project, vmID)
		if err == nil {
			_, err = a.wait(res.Operation, a.vmOp)
		}
		if err == nil {
			var on bool
			if on, resp, err = a.attached(vmID, ids.ID); err == nil && !on {
				err = errors.New("the VM does not list the disk")
			}
		}
		check("UpdateInstanceAttachDisks on the running VM (operation, VM lists the disk)", err, resp, "attached")
		detach := swagger.InstancesDetachDiskPostRequest{DetachDisks: []string{ids.ID}}
		res, resp, err = c.VMsApi.UpdateInstanceDetachDisks(ctx, detach, a.project, vmID)
		if err == nil {
			_, err = a.wait(res.Operation, a.vmOp)
		}
		if err == nil {
			var on bool
			if on, resp, err = a.attached(vmID, ids.ID); err == nil && on {
				err = errors.New("the VM still lists the disk")
			}
		}
		check("UpdateInstanceDetachDisks (operation, disk gone from the VM)", err, resp, "detached")
	}
	del, resp, err := c.DisksApi.DeleteDisk(ctx, a.project, ids.ID)
	if err == nil {
		_, err = a.wait(del.Operation, a.diskOp)
	}
	check("DeleteDisk (operation)", err, resp, "operation SUCCEEDED")
}

func ib(a api) {
	ctx, c := a.ctx, a.c
	networks, resp, err := c.IBNetworksApi.ListIBNetworks(ctx, a.project)
	network := ""
	for _, n := range networks.Items {
		for _, capacity := range n.Capacities {
			if n.Location == ibLocation && capacity.SliceType == ibType {
				network = n.Id
			}
		}
	}
	if err == nil && network == "" {
		err = fmt.Errorf("no IB network in %s for %s among %d", ibLocation, ibType, len(networks.Items))
	}
	if !check("ListIBNetworks (slice_type capacity)", err, resp, network) {
		return
	}
	partition, resp, err := c.IBPartitionsApi.CreateIBPartition(ctx, swagger.IbPartitionsPostRequestV1Alpha5{Name: "oc-clientgo-ib", IbNetworkId: network}, a.project)
	if !check("CreateIBPartition", err, resp, partition.Id) {
		return
	}
	got, resp, err := c.IBPartitionsApi.GetIBPartition(ctx, a.project, partition.Id)
	check("GetIBPartition", err, resp, got.Name)
	resp, err = c.IBPartitionsApi.DeleteIBPartition(ctx, a.project, partition.Id)
	check("DeleteIBPartition", err, resp, "deleted")
}

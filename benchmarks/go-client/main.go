// Command go-client measures a CSI plugin's node RPC latencies the way Nomad sees them: from a Go
// gRPC client over the plugin's unix socket, one connection, one call at a time, client-side wall
// time per call. It sets up what it needs with CSI calls (CreateVolume, ControllerPublishVolume and
// NodeStageVolume where the plugin advertises them), measures, and tears everything down again.
//
// It is built from Debian's Go packages only (see benchmarks/go-side-by-side); the CSI stubs are
// generated from csi-server/src/main/proto/csi.proto at build time into package "caravanbench/csi".
//
//	go-client --endpoint unix:///path/csi.sock --root DIR [--iterations 500] [--warmup 100]
//	          [--stage] [--label NAME] [--json FILE]
//	go-client table A.json B.json ...     # one table of several runs, side by side
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"caravanbench/csi"

	"google.golang.org/grpc"
)

// Nomad's volume usage directory name for a single-node-writer file-system mount.
const usage = "rw-file-system-single-node-writer"

// Every call gets this deadline, as Nomad gives each CSI call one; no call should come near it.
const callTimeout = 2 * time.Minute

type options struct {
	endpoint   string
	root       string
	iterations int
	warmup     int
	stage      bool
	label      string
	jsonPath   string
	capacity   int64
	fsType     string
}

// Result is one RPC's latencies in microseconds, as written to --json and read by "table".
type Result struct {
	RPC  string  `json:"rpc"`
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	Mean float64 `json:"mean_us"`
	Max  float64 `json:"max_us"`
}

// Run is one client run against one plugin.
type Run struct {
	Label      string   `json:"label"`
	Plugin     string   `json:"plugin"`
	Version    string   `json:"plugin_version"`
	Endpoint   string   `json:"endpoint"`
	Iterations int      `json:"iterations"`
	Warmup     int      `json:"warmup"`
	Started    string   `json:"started"`
	Load       string   `json:"load_before"`
	Results    []Result `json:"results"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "table" {
		if err := table(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "go-client table:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.endpoint, "endpoint", "", "the plugin's socket, unix:///path/csi.sock")
	flag.StringVar(&o.root, "root", "", "directory under which staging and target paths are made (Nomad's mount root layout)")
	flag.IntVar(&o.iterations, "iterations", 500, "measured cycles")
	flag.IntVar(&o.warmup, "warmup", 100, "cycles run before measuring, not counted")
	flag.BoolVar(&o.stage, "stage", false, "also measure NodeStageVolume + NodeUnstageVolume (when the plugin advertises them)")
	flag.StringVar(&o.label, "label", "", "name of this run in the output")
	flag.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	flag.Int64Var(&o.capacity, "capacity-bytes", 64<<20, "size of the volume to create")
	flag.StringVar(&o.fsType, "fs-type", "ext4", "fs_type of the mount capability")
	flag.Parse()
	if o.endpoint == "" || o.root == "" || o.iterations < 1 || o.warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	run, err := measure(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
	printTable([]Run{run})
	if o.jsonPath != "" {
		b, _ := json.MarshalIndent(run, "", "  ")
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "go-client:", err)
			os.Exit(1)
		}
	}
}

func dial(endpoint string) (*grpc.ClientConn, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if path == endpoint || path == "" {
		return nil, fmt.Errorf("endpoint %q is not unix:///path", endpoint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One connection for the whole run, dialled to the socket directly, as Nomad's CSI client does.
	return grpc.DialContext(ctx, "passthrough:///"+path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(codec{})),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}))
}

// timed runs one call with its own deadline and returns its wall time; the context is made before
// the clock starts so that only the call itself is measured.
func timed(call func(ctx context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	t0 := time.Now()
	err := call(ctx)
	return time.Since(t0), err
}

func bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

type plugin struct {
	id       csi.IdentityClient
	ctl      csi.ControllerClient
	node     csi.NodeClient
	nodeID   string
	stageCap bool
	statsCap bool
	ctlPub   bool
}

func measure(o options) (run Run, err error) {
	load, _ := os.ReadFile("/proc/loadavg")
	run = Run{Label: o.label, Endpoint: o.endpoint, Iterations: o.iterations, Warmup: o.warmup,
		Started: time.Now().UTC().Format(time.RFC3339), Load: strings.TrimSpace(string(load))}
	conn, err := dial(o.endpoint)
	if err != nil {
		return run, fmt.Errorf("dial %s: %w", o.endpoint, err)
	}
	defer conn.Close()
	p := plugin{id: csi.NewIdentityClient(conn), ctl: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn)}
	ctx, cancel := bg()
	defer cancel()
	info, err := p.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return run, fmt.Errorf("GetPluginInfo: %w", err)
	}
	run.Plugin, run.Version = info.GetName(), info.GetVendorVersion()
	if run.Label == "" {
		run.Label = run.Plugin
	}
	if err := p.discover(ctx); err != nil {
		return run, err
	}
	abs, err := filepath.Abs(o.root)
	if err != nil {
		return run, err
	}
	o.root = abs
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: o.fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	name := fmt.Sprintf("go-bench-%d-%d", os.Getpid(), time.Now().UnixNano())
	created, err := p.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name,
		CapacityRange: &csi.CapacityRange{RequiredBytes: o.capacity}, VolumeCapabilities: []*csi.VolumeCapability{capability}})
	if err != nil {
		return run, fmt.Errorf("CreateVolume: %w", err)
	}
	vol := created.GetVolume()
	volID := vol.GetVolumeId()
	// Whatever fails below, the volume is deleted again, and its failure is reported with the first one.
	defer func() {
		ctx, cancel := bg()
		defer cancel()
		if _, derr := p.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: volID}); derr != nil {
			err = errors.Join(err, fmt.Errorf("DeleteVolume %s: %w", volID, derr))
		}
	}()
	var publishContext map[string]string
	if p.ctlPub {
		r, err := p.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: volID, NodeId: p.nodeID,
			VolumeCapability: capability, VolumeContext: vol.GetVolumeContext()})
		if err != nil {
			return run, fmt.Errorf("ControllerPublishVolume: %w", err)
		}
		publishContext = r.GetPublishContext()
		defer func() {
			ctx, cancel := bg()
			defer cancel()
			if _, uerr := p.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: volID, NodeId: p.nodeID}); uerr != nil {
				err = errors.Join(err, fmt.Errorf("ControllerUnpublishVolume: %w", uerr))
			}
		}()
	}
	staging := ""
	stageReq := func() *csi.NodeStageVolumeRequest {
		return &csi.NodeStageVolumeRequest{VolumeId: volID, StagingTargetPath: staging, VolumeCapability: capability,
			PublishContext: publishContext, VolumeContext: vol.GetVolumeContext()}
	}
	unstageReq := func() *csi.NodeUnstageVolumeRequest {
		return &csi.NodeUnstageVolumeRequest{VolumeId: volID, StagingTargetPath: staging}
	}
	staged := false
	if p.stageCap {
		staging = filepath.Join(o.root, "staging", "default", volID, usage)
		if err := os.MkdirAll(staging, 0o755); err != nil {
			return run, err
		}
		if _, err := p.node.NodeStageVolume(ctx, stageReq()); err != nil {
			return run, fmt.Errorf("NodeStageVolume: %w", err)
		}
		staged = true
		defer func() {
			if !staged {
				return
			}
			ctx, cancel := bg()
			defer cancel()
			if _, uerr := p.node.NodeUnstageVolume(ctx, unstageReq()); uerr != nil {
				err = errors.Join(err, fmt.Errorf("NodeUnstageVolume: %w", uerr))
			}
		}()
	}
	publishReq := func(target string) *csi.NodePublishVolumeRequest {
		return &csi.NodePublishVolumeRequest{VolumeId: volID, StagingTargetPath: staging, TargetPath: target,
			VolumeCapability: capability, PublishContext: publishContext, VolumeContext: vol.GetVolumeContext()}
	}
	total := o.warmup + o.iterations
	keep := func(i int, s *[]time.Duration, d time.Duration) {
		if i >= o.warmup {
			*s = append(*s, d)
		}
	}

	var probe []time.Duration
	for i := 0; i < total; i++ {
		d, err := timed(func(ctx context.Context) error { _, err := p.id.Probe(ctx, &csi.ProbeRequest{}); return err })
		if err != nil {
			return run, fmt.Errorf("Probe: %w", err)
		}
		keep(i, &probe, d)
	}
	run.Results = append(run.Results, summarize("Probe", probe))

	var pub, unpub []time.Duration
	for i := 0; i < total; i++ {
		// Nomad makes per-alloc/<alloc>/<volume>/ and lets the plugin make (and remove) <usage>.
		parent := filepath.Join(o.root, "per-alloc", fmt.Sprintf("alloc-%d", i), volID)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return run, err
		}
		target := filepath.Join(parent, usage)
		pr := publishReq(target)
		ur := &csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target}
		d, err := timed(func(ctx context.Context) error { _, err := p.node.NodePublishVolume(ctx, pr); return err })
		if err != nil {
			return run, fmt.Errorf("NodePublishVolume %s: %w", target, err)
		}
		keep(i, &pub, d)
		d, err = timed(func(ctx context.Context) error { _, err := p.node.NodeUnpublishVolume(ctx, ur); return err })
		if err != nil {
			return run, fmt.Errorf("NodeUnpublishVolume %s: %w", target, err)
		}
		keep(i, &unpub, d)
		if i == 0 {
			if _, serr := os.Lstat(target); serr == nil && isMountPoint(target) {
				return run, fmt.Errorf("NodeUnpublishVolume left %s mounted", target)
			}
		}
		// What the plugin left behind (a plugin may keep the target directory) goes with the alloc.
		if err := os.RemoveAll(filepath.Join(o.root, "per-alloc", fmt.Sprintf("alloc-%d", i))); err != nil {
			return run, err
		}
	}
	run.Results = append(run.Results, summarize("NodePublishVolume", pub), summarize("NodeUnpublishVolume", unpub))

	if p.statsCap {
		parent := filepath.Join(o.root, "per-alloc", "alloc-stats", volID)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return run, err
		}
		target := filepath.Join(parent, usage)
		if _, err := p.node.NodePublishVolume(ctx, publishReq(target)); err != nil {
			return run, fmt.Errorf("NodePublishVolume %s: %w", target, err)
		}
		var stats []time.Duration
		sr := &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: target, StagingTargetPath: staging}
		var serr error
		for i := 0; i < total && serr == nil; i++ {
			var d time.Duration
			d, serr = timed(func(ctx context.Context) error { _, err := p.node.NodeGetVolumeStats(ctx, sr); return err })
			keep(i, &stats, d)
		}
		_, uerr := p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target})
		os.RemoveAll(filepath.Join(o.root, "per-alloc", "alloc-stats"))
		if serr != nil {
			return run, fmt.Errorf("NodeGetVolumeStats: %w", serr)
		}
		if uerr != nil {
			return run, fmt.Errorf("NodeUnpublishVolume %s: %w", target, uerr)
		}
		run.Results = append(run.Results, summarize("NodeGetVolumeStats", stats))
	}

	if o.stage && p.stageCap {
		// The volume was staged (and, the first time, formatted) above; unstage it and time the
		// stage + unstage of an already formatted volume.
		if _, err := p.node.NodeUnstageVolume(ctx, unstageReq()); err != nil {
			return run, fmt.Errorf("NodeUnstageVolume: %w", err)
		}
		staged = false
		var st, unst []time.Duration
		for i := 0; i < total; i++ {
			sr := stageReq()
			d, err := timed(func(ctx context.Context) error { _, err := p.node.NodeStageVolume(ctx, sr); return err })
			if err != nil {
				return run, fmt.Errorf("NodeStageVolume: %w", err)
			}
			staged = true
			keep(i, &st, d)
			ur := unstageReq()
			d, err = timed(func(ctx context.Context) error { _, err := p.node.NodeUnstageVolume(ctx, ur); return err })
			if err != nil {
				return run, fmt.Errorf("NodeUnstageVolume: %w", err)
			}
			staged = false
			keep(i, &unst, d)
		}
		run.Results = append(run.Results, summarize("NodeStageVolume", st), summarize("NodeUnstageVolume", unst))
	}
	return run, nil
}

// discover reads the capabilities that decide the set-up: whether the plugin stages, reports
// stats, and wants ControllerPublishVolume first (as Nomad reads them before its first call).
func (p *plugin) discover(ctx context.Context) error {
	caps, err := p.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	controller := false
	for _, c := range caps.GetCapabilities() {
		if c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE {
			controller = true
		}
	}
	if !controller {
		return errors.New("the plugin has no controller service: go-client creates its volume with CreateVolume")
	}
	nc, err := p.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	for _, c := range nc.GetCapabilities() {
		switch c.GetRpc().GetType() {
		case csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			p.stageCap = true
		case csi.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			p.statsCap = true
		}
	}
	cc, err := p.ctl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("ControllerGetCapabilities: %w", err)
	}
	for _, c := range cc.GetCapabilities() {
		if c.GetRpc().GetType() == csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME {
			p.ctlPub = true
		}
	}
	ni, err := p.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return fmt.Errorf("NodeGetInfo: %w", err)
	}
	p.nodeID = ni.GetNodeId()
	return nil
}

// isMountPoint says whether path is a mount point by its device differing from its parent's: a
// sanity check only, blind to a bind of a directory of the same filesystem (a plugin whose volumes
// are plain directories next to the target), which it then does not flag.
func isMountPoint(path string) bool {
	a, err1 := os.Lstat(path)
	b, err2 := os.Lstat(filepath.Dir(path))
	if err1 != nil || err2 != nil {
		return false
	}
	return deviceOf(a) != deviceOf(b)
}

func deviceOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

func summarize(rpc string, d []time.Duration) Result {
	us := make([]float64, len(d))
	sum := 0.0
	for i, v := range d {
		us[i] = float64(v.Nanoseconds()) / 1e3
		sum += us[i]
	}
	sort.Float64s(us)
	r := Result{RPC: rpc, N: len(us)}
	if len(us) == 0 {
		return r
	}
	r.P50, r.P90, r.P99 = rank(us, 0.50), rank(us, 0.90), rank(us, 0.99)
	r.Mean, r.Max = sum/float64(len(us)), us[len(us)-1]
	return r
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func table(files []string) error {
	if len(files) == 0 {
		return errors.New("usage: go-client table A.json [B.json ...]")
	}
	var runs []Run
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Run
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		runs = append(runs, r)
	}
	printTable(runs)
	return nil
}

// printTable prints one row per RPC and, for each run, its p50/p90/p99 in microseconds; with two
// or more runs, the ratio of each run's p50 to the first run's.
func printTable(runs []Run) {
	for _, r := range runs {
		fmt.Printf("# %s: plugin %s %s at %s, %d measured + %d warm-up cycles, started %s, load before %s\n",
			r.Label, r.Plugin, r.Version, r.Endpoint, r.Iterations, r.Warmup, r.Started, r.Load)
	}
	var rpcs []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, x := range r.Results {
			if !seen[x.RPC] {
				seen[x.RPC] = true
				rpcs = append(rpcs, x.RPC)
			}
		}
	}
	header := fmt.Sprintf("%-22s", "RPC (µs, client wall)")
	for i, r := range runs {
		header += fmt.Sprintf(" | %-30s", r.Label+" p50 / p90 / p99")
		if i > 0 {
			header += fmt.Sprintf(" | %-14s", "p50 ÷ "+runs[0].Label)
		}
	}
	fmt.Println(header)
	fmt.Println(strings.Repeat("-", len([]rune(header))))
	for _, rpc := range rpcs {
		line := fmt.Sprintf("%-22s", rpc)
		var first *Result
		for i, r := range runs {
			var x *Result
			for j := range r.Results {
				if r.Results[j].RPC == rpc {
					x = &r.Results[j]
				}
			}
			if i == 0 {
				first = x
			}
			if x == nil {
				line += fmt.Sprintf(" | %-30s", "-")
			} else {
				line += fmt.Sprintf(" | %-30s", fmt.Sprintf("%.0f / %.0f / %.0f", x.P50, x.P90, x.P99))
			}
			if i > 0 {
				if x != nil && first != nil && first.P50 > 0 {
					line += fmt.Sprintf(" | %-14s", fmt.Sprintf("%.2f", x.P50/first.P50))
				} else {
					line += fmt.Sprintf(" | %-14s", "-")
				}
			}
		}
		fmt.Println(line)
	}
}

package cem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/modulo-testing/modulo/cem/proto"
)

// grpcPlugin is the go-plugin glue on both sides: the plugin registers impl as the gRPC
// service, the host gets a grpcClient. It speaks gRPC only.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl CEM // nil on the host side
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterCEMServer(s, &grpcServer{impl: p.impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &grpcClient{client: pb.NewCEMClient(c)}, nil
}

// grpcServer serves a CEM implementation inside the plugin process.
type grpcServer struct {
	pb.UnimplementedCEMServer
	impl CEM
}

func (s *grpcServer) Info(ctx context.Context, req *pb.InfoRequest) (*pb.InfoResponse, error) {
	info, err := s.impl.Info(ctx, req.GetConfig())
	if err != nil {
		return nil, err
	}
	return &pb.InfoResponse{Info: &pb.Info{
		Name:           info.Name,
		Version:        info.Version,
		ServerVersion:  info.ServerVersion,
		Releases:       info.Releases,
		ReleaseSetting: info.ReleaseSetting,
		Capabilities: &pb.Capabilities{
			Drms:            info.Capabilities.DRMs,
			PortsPerReplica: int64(info.Capabilities.PortsPerReplica),
			Restore:         info.Capabilities.Restore,
			Network:         info.Capabilities.Network,
			Failures:        info.Capabilities.Failures,
			Declared:        specsPB(info.Capabilities.Declared),
			ServicePorts:    int64(info.Capabilities.ServicePorts),
		},
	}}, nil
}

func specOf(spec *pb.ClusterSpec) ClusterSpec {
	return ClusterSpec{
		DRM:         spec.GetDrm(),
		Ops:         int(spec.GetOps()),
		Replicas:    int(spec.GetReplicas()),
		Dir:         spec.GetDir(),
		BasePort:    int(spec.GetBasePort()),
		ScheduleID:  spec.GetScheduleId(),
		Config:      spec.GetConfig(),
		StepTimeout: spec.GetStepTimeout().AsDuration(),
	}
}

func specPB(spec ClusterSpec) *pb.ClusterSpec {
	return &pb.ClusterSpec{
		Drm:         spec.DRM,
		Ops:         int64(spec.Ops),
		Replicas:    int64(spec.Replicas),
		Dir:         spec.Dir,
		BasePort:    int64(spec.BasePort),
		ScheduleId:  spec.ScheduleID,
		Config:      spec.Config,
		StepTimeout: durationpb.New(spec.StepTimeout),
	}
}

func (s *grpcServer) Start(ctx context.Context, req *pb.StartRequest) (*pb.StartResponse, error) {
	err := s.impl.Start(ctx, specOf(req.GetSpec()))
	var nr *NotReachedError
	if errors.As(err, &nr) {
		return &pb.StartResponse{NotReached: &pb.NotReached{Step: int64(nr.Step), Awaited: nr.Awaited}}, nil
	}
	var ue *UnrealisableError
	if errors.As(err, &ue) {
		return &pb.StartResponse{Unrealisable: &pb.Unrealisable{Step: int64(ue.Step), Reason: ue.Reason}}, nil
	}
	if err != nil {
		return nil, err
	}
	return &pb.StartResponse{}, nil
}

// Apply sends a *NotReachedError, *UnrealisableError or *NonconformantError back in the reply,
// with the actions taken before it, so that the host gets the error's fields back; any other
// error becomes a gRPC status.
func (s *grpcServer) Apply(ctx context.Context, req *pb.ApplyRequest) (*pb.ApplyResponse, error) {
	step := req.GetStep()
	report, err := s.impl.Apply(ctx, Step{Index: int(step.GetIndex()), Transition: step.GetTransition()})
	var nr *NotReachedError
	var ue *UnrealisableError
	var ne *NonconformantError
	if err != nil && !errors.As(err, &nr) && !errors.As(err, &ue) && !errors.As(err, &ne) {
		return nil, err
	}
	resp := &pb.ApplyResponse{Report: &pb.StepReport{Actions: actionsPB(report.Actions)}}
	for _, w := range report.Writes {
		resp.Report.Writes = append(resp.Report.Writes, &pb.Write{Key: w.Key, Value: w.Value, Acked: w.Acked,
			Minority: w.Minority, Answer: string(w.Answer), AnsweredAfter: durationpb.New(w.AnsweredAfter), Async: w.Async})
	}
	for _, o := range report.Observations {
		resp.Report.Observations = append(resp.Report.Observations, &pb.Observation{Replica: int64(o.Replica), Fields: o.Fields})
	}
	for _, a := range report.Alarms {
		resp.Report.Alarms = append(resp.Report.Alarms, &pb.Alarm{Replica: int64(a.Replica), What: a.What, Broken: a.Broken, Unrecoverable: a.Unrecoverable, Stuck: a.Stuck, Lost: a.Lost})
	}
	if nr != nil {
		resp.NotReached = &pb.NotReached{Step: int64(nr.Step), Awaited: nr.Awaited}
	}
	if ue != nil {
		resp.Unrealisable = &pb.Unrealisable{Step: int64(ue.Step), Reason: ue.Reason}
	}
	if ne != nil {
		resp.Nonconformant = &pb.Nonconformant{Step: int64(ne.Step), Check: ne.Check, Detail: ne.Detail}
	}
	return resp, nil
}

func (s *grpcServer) Read(ctx context.Context, _ *pb.ReadRequest) (*pb.ReadResponse, error) {
	snap, err := s.impl.Read(ctx)
	if err != nil {
		return nil, err
	}
	resp := &pb.ReadResponse{Snapshot: &pb.Snapshot{}}
	for _, r := range snap.Replicas {
		resp.Snapshot.Replicas = append(resp.Snapshot.Replicas, &pb.ReplicaData{Data: r.Data, Err: r.Err, Group: int64(r.Group)})
	}
	return resp, nil
}

func (s *grpcServer) Teardown(ctx context.Context, _ *pb.TeardownRequest) (*pb.TeardownResponse, error) {
	if err := s.impl.Teardown(ctx); err != nil {
		return nil, err
	}
	return &pb.TeardownResponse{}, nil
}

// Save and Restore answer Unimplemented for a plugin that is no Restorer, which its
// capabilities say.
func (s *grpcServer) Save(ctx context.Context, req *pb.SaveRequest) (*pb.SaveResponse, error) {
	r, ok := s.impl.(Restorer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the plugin cannot save a cluster")
	}
	saved, err := r.Save(ctx, req.GetDir())
	if err != nil {
		return nil, err
	}
	return &pb.SaveResponse{Saved: savedPB(saved)}, nil
}

func (s *grpcServer) Restore(ctx context.Context, req *pb.RestoreRequest) (*pb.RestoreResponse, error) {
	r, ok := s.impl.(Restorer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the plugin cannot restore a cluster")
	}
	restored, err := r.Restore(ctx, specOf(req.GetSpec()), req.GetDir(), req.GetSteps())
	if err != nil {
		return nil, err
	}
	return &pb.RestoreResponse{Restored: savedPB(restored.Saved), Actions: actionsPB(restored.Actions)}, nil
}

func specsPB(specs []DRMSpec) []*pb.DRMSpec {
	var out []*pb.DRMSpec
	for _, d := range specs {
		out = append(out, &pb.DRMSpec{
			Name: d.Name, Title: d.Title, Rules: d.Rules, System: d.System, Summary: d.Summary,
			Ops: int64(d.Ops), Replicas: int64(d.Replicas), OpsRange: ints64(d.OpsRange), ReplicasRange: ints64(d.ReplicasRange),
			PowerLoss: d.PowerLoss, Partition: d.Partition,
		})
	}
	return out
}

func specsOf(specs []*pb.DRMSpec) []DRMSpec {
	var out []DRMSpec
	for _, d := range specs {
		out = append(out, DRMSpec{
			Name: d.GetName(), Title: d.GetTitle(), Rules: d.GetRules(), System: d.GetSystem(), Summary: d.GetSummary(),
			Ops: int(d.GetOps()), Replicas: int(d.GetReplicas()), OpsRange: ints(d.GetOpsRange()), ReplicasRange: ints(d.GetReplicasRange()),
			PowerLoss: d.GetPowerLoss(), Partition: d.GetPartition(),
		})
	}
	return out
}

func ints64(v []int) []int64 {
	var out []int64
	for _, x := range v {
		out = append(out, int64(x))
	}
	return out
}

func ints(v []int64) []int {
	var out []int
	for _, x := range v {
		out = append(out, int(x))
	}
	return out
}

func savedPB(s Saved) *pb.Saved {
	return &pb.Saved{Paths: s.Paths, Bytes: s.Bytes, Digest: s.Digest}
}

func savedOf(s *pb.Saved) Saved {
	return Saved{Paths: s.GetPaths(), Bytes: s.GetBytes(), Digest: s.GetDigest()}
}

func actionsPB(actions []Action) []*pb.Action {
	var out []*pb.Action
	for _, a := range actions {
		out = append(out, &pb.Action{Time: timestampOf(a.Time), Replica: int64(a.Replica), What: a.What})
	}
	return out
}

func actionsOf(actions []*pb.Action) []Action {
	var out []Action
	for _, a := range actions {
		out = append(out, Action{Time: timeOf(a.GetTime()), Replica: int(a.GetReplica()), What: a.GetWhat()})
	}
	return out
}

var (
	_ CEM      = (*grpcClient)(nil)
	_ Restorer = (*grpcClient)(nil)
)

// grpcClient implements CEM on the host by calling the plugin's gRPC service.
//
// What changes on the way: Action times arrive in UTC (the zero time stays zero), empty slices
// and Config arrive as nil, and ReplicaData.Data is never nil.
type grpcClient struct {
	client pb.CEMClient
}

func (c *grpcClient) Info(ctx context.Context, config []byte) (Info, error) {
	resp, err := c.client.Info(ctx, &pb.InfoRequest{Config: config})
	if err != nil {
		return Info{}, callError(ctx, "Info", err)
	}
	info := resp.GetInfo()
	return Info{
		Name:           info.GetName(),
		Version:        info.GetVersion(),
		ServerVersion:  info.GetServerVersion(),
		Releases:       info.GetReleases(),
		ReleaseSetting: info.GetReleaseSetting(),
		Capabilities: Capabilities{
			DRMs:            info.GetCapabilities().GetDrms(),
			PortsPerReplica: int(info.GetCapabilities().GetPortsPerReplica()),
			Restore:         info.GetCapabilities().GetRestore(),
			Network:         info.GetCapabilities().GetNetwork(),
			Failures:        info.GetCapabilities().GetFailures(),
			Declared:        specsOf(info.GetCapabilities().GetDeclared()),
			ServicePorts:    int(info.GetCapabilities().GetServicePorts()),
		},
	}, nil
}

func (c *grpcClient) Start(ctx context.Context, spec ClusterSpec) error {
	resp, err := c.client.Start(ctx, &pb.StartRequest{Spec: specPB(spec)})
	if err != nil {
		return callError(ctx, "Start", err)
	}
	if nr := resp.GetNotReached(); nr != nil {
		return &NotReachedError{Step: int(nr.GetStep()), Awaited: nr.GetAwaited()}
	}
	if ue := resp.GetUnrealisable(); ue != nil {
		return &UnrealisableError{Step: int(ue.GetStep()), Reason: ue.GetReason()}
	}
	return nil
}

// Apply returns the plugin's *NotReachedError, *UnrealisableError or *NonconformantError as
// one, together with the actions taken before it.
func (c *grpcClient) Apply(ctx context.Context, step Step) (StepReport, error) {
	resp, err := c.client.Apply(ctx, &pb.ApplyRequest{Step: &pb.Step{
		Index:      int64(step.Index),
		Transition: step.Transition,
	}})
	if err != nil {
		return StepReport{}, callError(ctx, "Apply", err)
	}
	report := StepReport{Actions: actionsOf(resp.GetReport().GetActions())}
	for _, w := range resp.GetReport().GetWrites() {
		report.Writes = append(report.Writes, Write{Key: w.GetKey(), Value: w.GetValue(), Acked: w.GetAcked(),
			Minority: w.GetMinority(), Answer: Answer(w.GetAnswer()), AnsweredAfter: w.GetAnsweredAfter().AsDuration(), Async: w.GetAsync()})
	}
	for _, o := range resp.GetReport().GetObservations() {
		report.Observations = append(report.Observations, Observation{Replica: int(o.GetReplica()), Fields: o.GetFields()})
	}
	for _, a := range resp.GetReport().GetAlarms() {
		report.Alarms = append(report.Alarms, Alarm{Replica: int(a.GetReplica()), What: a.GetWhat(), Broken: a.GetBroken(), Unrecoverable: a.GetUnrecoverable(), Stuck: a.GetStuck(), Lost: a.GetLost()})
	}
	if nr := resp.GetNotReached(); nr != nil {
		return report, &NotReachedError{Step: int(nr.GetStep()), Awaited: nr.GetAwaited()}
	}
	if ue := resp.GetUnrealisable(); ue != nil {
		return report, &UnrealisableError{Step: int(ue.GetStep()), Reason: ue.GetReason()}
	}
	if ne := resp.GetNonconformant(); ne != nil {
		return report, &NonconformantError{Step: int(ne.GetStep()), Check: ne.GetCheck(), Detail: ne.GetDetail()}
	}
	return report, nil
}

func (c *grpcClient) Read(ctx context.Context) (Snapshot, error) {
	resp, err := c.client.Read(ctx, &pb.ReadRequest{})
	if err != nil {
		return Snapshot{}, callError(ctx, "Read", err)
	}
	var snap Snapshot
	for _, r := range resp.GetSnapshot().GetReplicas() {
		data := r.GetData()
		if data == nil {
			data = map[string]string{} // protobuf does not tell an empty map from none
		}
		snap.Replicas = append(snap.Replicas, ReplicaData{Data: data, Err: r.GetErr(), Group: int(r.GetGroup())})
	}
	return snap, nil
}

func (c *grpcClient) Teardown(ctx context.Context) error {
	if _, err := c.client.Teardown(ctx, &pb.TeardownRequest{}); err != nil {
		return callError(ctx, "Teardown", err)
	}
	return nil
}

func (c *grpcClient) Save(ctx context.Context, dir string) (Saved, error) {
	resp, err := c.client.Save(ctx, &pb.SaveRequest{Dir: dir})
	if err != nil {
		return Saved{}, callError(ctx, "Save", err)
	}
	return savedOf(resp.GetSaved()), nil
}

func (c *grpcClient) Restore(ctx context.Context, spec ClusterSpec, dir string, steps []string) (Restored, error) {
	resp, err := c.client.Restore(ctx, &pb.RestoreRequest{Spec: specPB(spec), Dir: dir, Steps: steps})
	if err != nil {
		return Restored{}, callError(ctx, "Restore", err)
	}
	return Restored{Saved: savedOf(resp.GetRestored()), Actions: actionsOf(resp.GetActions())}, nil
}

// callError turns the error of a call to the plugin's method into one line that names the
// method. A call cut short by ctx wraps ctx's error, so that errors.Is finds it; an error the
// plugin returned keeps its text; a broken connection (the plugin died) says so.
func callError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("plugin %s: %w", method, ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable:
		return fmt.Errorf("plugin %s: lost the connection to the plugin (did it exit?): %s", method, st.Message())
	case codes.Unknown:
		return fmt.Errorf("plugin %s: %s", method, st.Message())
	default:
		return fmt.Errorf("plugin %s: %s: %s", method, st.Code(), st.Message())
	}
}

// timestampOf and timeOf carry the zero time as an unset timestamp, so that it stays zero.
func timestampOf(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func timeOf(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

package server_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/server"
)

// TestRankingWireIsTheKnobTable checks canon.v1.Ranking has one field per knob,
// named as the knob and of its kind, so the wire needs no code per knob; and that
// every knob survives the wire both ways.
func TestRankingWireIsTheKnobTable(t *testing.T) {
	t.Parallel()
	kinds := map[domain.KnobKind]protoreflect.Kind{
		domain.KnobNumber: protoreflect.DoubleKind, domain.KnobInteger: protoreflect.Int32Kind,
		domain.KnobSwitch: protoreflect.BoolKind,
	}
	fields := (&canonv1.Ranking{}).ProtoReflect().Descriptor().Fields()
	if fields.Len() != len(domain.Knobs()) {
		t.Errorf("canon.v1.Ranking has %d fields, the knob table %d", fields.Len(), len(domain.Knobs()))
	}
	override := domain.RankingOverride{}
	for i, k := range domain.Knobs() {
		fd := fields.ByName(protoreflect.Name(k.Name))
		if fd == nil || fd.Kind() != kinds[k.Kind] || !fd.HasPresence() {
			t.Errorf("%s: canon.v1.Ranking field %v, want an optional %v", k.Name, fd, kinds[k.Kind])
			continue
		}
		override[k.Name] = float64(i%2) + 1
		if k.Kind == domain.KnobSwitch {
			override[k.Name] = 0 // an unset switch would not be sent
		}
	}
	wire := server.SearchRequestProto(&domain.SearchRequest{Options: domain.SearchOptions{Ranking: override}})
	back := server.RankingOverride(wire.GetOptions().GetRanking())
	if len(back) != len(override) {
		t.Errorf("%d knobs came back of %d", len(back), len(override))
	}
	for name, v := range override {
		if back[name] != v {
			t.Errorf("%s: sent %g, got back %g", name, v, back[name])
		}
	}
	if server.RankingOverride(&canonv1.Ranking{}) == nil || len(server.RankingOverride(&canonv1.Ranking{})) != 0 {
		t.Error("an empty Ranking overrides nothing")
	}
}

package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"
)

// sendVectorPointersInBinary makes pgx send a *pgvector.Vector parameter the way it
// sends a pgvector.Vector: in binary, through pgvector-go's codec. sqlc passes
// vector parameters (sqlc.arg(x)::vector) as pointers, the codec plans only
// values, and pgx does not dereference a pointer whose type is a driver.Valuer:
// the query embedding went out as text instead, 384 numbers printed on every
// search (a fifth of the search's own CPU time in Go) and parsed again by the
// server. A nil pointer is still NULL (pgx handles nil before planning).
func sendVectorPointersInBinary(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{derefVector}, m.TryWrapEncodePlanFuncs...)
}

func derefVector(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if v, ok := value.(*pgvector.Vector); ok && v != nil {
		return &derefVectorPlan{}, *v, true
	}
	return nil, nil, false
}

type derefVectorPlan struct{ next pgtype.EncodePlan }

func (p *derefVectorPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *derefVectorPlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(*value.(*pgvector.Vector), buf)
}

// storeVectorsAsHalfvec lets a pgvector.Vector go to a halfvec column or parameter
// (chunks.embedding with KB_VECTOR_TYPE=halfvec) in binary, converted in Go:
// pgvector-go's halfvec codec takes only HalfVector, and pgx's fallback for COPY
// prints every number as text and parses it again. Reading a halfvec into a
// *pgvector.Vector works the same way back.
func storeVectorsAsHalfvec(m *pgtype.Map) {
	t, ok := m.TypeForName("halfvec")
	if !ok {
		return
	}
	half := &pgtype.Type{Name: t.Name, OID: t.OID, Codec: halfvecFromVector{t.Codec}}
	m.RegisterType(half)
	if arr, ok := m.TypeForName("_halfvec"); ok {
		m.RegisterType(&pgtype.Type{Name: arr.Name, OID: arr.OID, Codec: &pgtype.ArrayCodec{ElementType: half}})
	}
}

// halfvecFromVector is pgvector-go's halfvec codec that also encodes and scans
// pgvector.Vector.
type halfvecFromVector struct{ pgtype.Codec }

func (c halfvecFromVector) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(pgvector.Vector); ok {
		if next := c.Codec.PlanEncode(m, oid, format, pgvector.HalfVector{}); next != nil {
			return vectorAsHalfvecPlan{next}
		}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

func (c halfvecFromVector) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*pgvector.Vector); ok {
		if next := c.Codec.PlanScan(m, oid, format, &pgvector.HalfVector{}); next != nil {
			return halfvecAsVectorPlan{next}
		}
	}
	return c.Codec.PlanScan(m, oid, format, target)
}

type vectorAsHalfvecPlan struct{ next pgtype.EncodePlan }

func (p vectorAsHalfvecPlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgvector.NewHalfVector(value.(pgvector.Vector).Slice()), buf)
}

type halfvecAsVectorPlan struct{ next pgtype.ScanPlan }

func (p halfvecAsVectorPlan) Scan(src []byte, target any) error {
	if src == nil {
		return errors.New("cannot scan a NULL halfvec into a pgvector.Vector (scan into a pointer)")
	}
	var h pgvector.HalfVector
	if err := p.next.Scan(src, &h); err != nil {
		return err
	}
	*target.(*pgvector.Vector) = pgvector.NewVector(h.Slice())
	return nil
}

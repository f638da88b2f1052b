package postgres

import (
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

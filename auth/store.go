package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/ingest"
)

// Store keeps API keys and the audit log in PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a store over pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// KeyInfo describes a key without its secret.
type KeyInfo struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Prefix     string      `json:"prefix"`
	Projects   []string    `json:"projects"`
	Role       domain.Role `json:"role"`
	Groups     []string    `json:"groups"`
	CreatedAt  time.Time   `json:"created_at"`
	LastUsedAt *time.Time  `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time  `json:"revoked_at,omitempty"`
}

// NewKeyRequest is what a new key may do.
type NewKeyRequest struct {
	Name     string
	Projects []string
	Role     string
	Groups   []string
}

// maxKeyNameLen bounds a key's name.
const maxKeyNameLen = 200

// validate normalises r and reports the first problem in words a person can act on.
func (r *NewKeyRequest) validate() (domain.Role, error) {
	role, err := domain.ParseRole(r.Role)
	if err != nil {
		return "", err
	}
	if len(r.Projects) == 0 {
		return "", &domain.InvalidError{Message: "a key needs at least one project (--project)"}
	}
	for _, p := range r.Projects {
		if !ingest.ValidProjectKey(p) {
			return "", &domain.InvalidError{Message: fmt.Sprintf("project %s is not a project key: lowercase letters, digits, '-', '_' or '.'", domain.Quote(p))}
		}
	}
	for _, g := range r.Groups {
		if !domain.ValidGroup(g) {
			return "", &domain.InvalidError{Message: fmt.Sprintf("group %s must be 1-63 letters, digits, '_', '.', ':' or '-'", domain.Quote(g))}
		}
	}
	r.Name = strings.TrimSpace(r.Name)
	if r.Name == "" {
		r.Name = string(role) + " key for " + strings.Join(r.Projects, ", ")
	}
	if p := domain.TextProblem(r.Name); p != "" {
		return "", &domain.InvalidError{Message: fmt.Sprintf("the key's name %s %s", domain.Quote(r.Name), p)}
	}
	if len(r.Name) > maxKeyNameLen {
		return "", &domain.InvalidError{Message: fmt.Sprintf("the key's name is %d bytes long; the limit is %d", len(r.Name), maxKeyNameLen)}
	}
	r.Projects = sortedUnique(r.Projects)
	r.Groups = sortedUnique(r.Groups)
	return role, nil
}

func sortedUnique(in []string) []string {
	out := append([]string{}, in...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Create stores a new key and returns it; the secret is not kept anywhere.
func (s *Store) Create(ctx context.Context, r NewKeyRequest) (string, KeyInfo, error) {
	role, err := r.validate()
	if err != nil {
		return "", KeyInfo{}, err
	}
	key, prefix, hash, err := NewKey()
	if err != nil {
		return "", KeyInfo{}, err
	}
	row, err := db.New(s.pool).APIKeyInsert(ctx, db.APIKeyInsertParams{
		Name: r.Name, Prefix: prefix, KeyHash: hash, Projects: r.Projects, Role: string(role), Groups: r.Groups,
	})
	if err != nil {
		return "", KeyInfo{}, fmt.Errorf("store key: %w", err)
	}
	return key, KeyInfo{ID: row.ID.String(), Name: r.Name, Prefix: prefix, Projects: r.Projects, Role: role,
		Groups: r.Groups, CreatedAt: row.CreatedAt}, nil
}

// UnknownProjects returns, sorted, the well-formed keys among projects that
// name no project (a malformed one is Create's to refuse): the API makes keys
// for existing projects only, the CLI says which do not exist yet.
func (s *Store) UnknownProjects(ctx context.Context, projects []string) ([]string, error) {
	var valid []string
	for _, p := range sortedUnique(projects) {
		if ingest.ValidProjectKey(p) {
			valid = append(valid, p)
		}
	}
	if len(valid) == 0 {
		return nil, nil
	}
	rows, err := db.New(s.pool).ProjectIDsByKeys(ctx, valid)
	if err != nil {
		return nil, fmt.Errorf("look up projects: %w", err)
	}
	found := make(map[string]bool, len(rows))
	for _, r := range rows {
		found[r.ProjectKey] = true
	}
	var unknown []string
	for _, p := range valid {
		if !found[p] {
			unknown = append(unknown, p)
		}
	}
	return unknown, nil
}

// List returns every key, oldest first.
func (s *Store) List(ctx context.Context) ([]KeyInfo, error) {
	rows, err := db.New(s.pool).APIKeyList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, keyInfo(db.APIKeyGetRow(r)))
	}
	return out, nil
}

// Get returns one key; *domain.NotFoundError when there is none.
func (s *Store) Get(ctx context.Context, id string) (KeyInfo, error) {
	uid, err := parseID(id)
	if err != nil {
		return KeyInfo{}, err
	}
	row, err := db.New(s.pool).APIKeyGet(ctx, uid)
	if errors.Is(err, pgx.ErrNoRows) {
		return KeyInfo{}, &domain.NotFoundError{Message: fmt.Sprintf("no key with id %s", id)}
	}
	if err != nil {
		return KeyInfo{}, err
	}
	return keyInfo(row), nil
}

// Revoke revokes a key: its next request is refused.
func (s *Store) Revoke(ctx context.Context, id string) (KeyInfo, error) {
	uid, err := parseID(id)
	if err != nil {
		return KeyInfo{}, err
	}
	if _, err := db.New(s.pool).APIKeyRevoke(ctx, uid); errors.Is(err, pgx.ErrNoRows) {
		return KeyInfo{}, &domain.NotFoundError{Message: fmt.Sprintf("no key with id %s", id)}
	} else if err != nil {
		return KeyInfo{}, err
	}
	return s.Get(ctx, id)
}

func parseID(id string) (pgtype.UUID, error) {
	var uid pgtype.UUID
	if err := uid.Scan(id); err != nil {
		return uid, &domain.InvalidError{Message: fmt.Sprintf("%s is not a key id (a UUID, as canon keys list shows)", domain.Quote(id))}
	}
	return uid, nil
}

func keyInfo(r db.APIKeyGetRow) KeyInfo {
	k := KeyInfo{ID: r.ID.String(), Name: r.Name, Prefix: r.Prefix, Projects: r.Projects, Role: domain.Role(r.Role),
		Groups: r.Groups, CreatedAt: r.CreatedAt}
	if r.LastUsedAt.Valid {
		k.LastUsedAt = &r.LastUsedAt.Time
	}
	if r.RevokedAt.Valid {
		k.RevokedAt = &r.RevokedAt.Time
	}
	return k
}

// Authentication failures; both answer Unauthenticated.
var (
	ErrUnknownKey = errors.New("unknown API key")
	ErrRevokedKey = errors.New("this API key has been revoked")
)

// Authenticate returns the principal of a well-formed key.
func (s *Store) Authenticate(ctx context.Context, key string) (domain.Principal, error) {
	q := db.New(s.pool)
	row, err := q.APIKeyByHash(ctx, HashKey(key))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Principal{}, ErrUnknownKey
	}
	if err != nil {
		return domain.Principal{}, err
	}
	if row.RevokedAt.Valid {
		return domain.Principal{}, ErrRevokedKey
	}
	if err := q.APIKeyTouch(ctx, row.ID); err != nil {
		return domain.Principal{}, err
	}
	groups := row.Groups
	if groups == nil {
		groups = []string{}
	}
	return domain.Principal{KeyID: row.ID.String(), Name: row.Name, Projects: row.Projects,
		Role: domain.Role(row.Role), Groups: groups}, nil
}

// AuditEntry is one audit_log row.
type AuditEntry struct {
	Principal domain.Principal
	RPC       string
	Project   string
	Document  string
	// Outcome is "ok" or the code that refused or failed the call.
	Outcome string
}

// maxAuditedBytes bounds an audit row's project and document: a search's 16
// project keys of at most 63 bytes, a slug of domain.MaxSlugBytes, fit.
const maxAuditedBytes = 1024

// Audit records e. It runs on its own deadline, so a cancelled request is still recorded.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var keyID pgtype.UUID
	if e.Principal.KeyID != "" {
		if err := keyID.Scan(e.Principal.KeyID); err != nil {
			return err
		}
	}
	actor := e.Principal.Actor()
	if e.Principal.KeyID == "" {
		actor = e.Principal.Name
	}
	// A refused call is recorded too, with the names it sent before they were
	// validated: a NUL or a megabyte must not cost the row.
	return db.New(s.pool).AuditInsert(ctx, db.AuditInsertParams{KeyID: keyID, Actor: actor, Rpc: e.RPC,
		Project: domain.Storable(e.Project, maxAuditedBytes), Document: domain.Storable(e.Document, maxAuditedBytes),
		Outcome: e.Outcome})
}

package conformance

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
)

// Signing. A report is a certificate only when it carries an Ed25519
// signature by a lab's private key, which the vendor whose backend was
// tested does not hold; anyone holding the lab's public key can check it
// (Verify). A report sealed without a key carries a plain SHA-256 digest:
// an integrity checksum that detects accidental edits, which anyone can
// recompute after editing, so a verifier that holds a lab key refuses it
// ("NOT CERTIFIED: unsigned"). There is no other algorithm and no
// negotiation: the verifier's key decides what it accepts, so a signed
// report downgraded to a digest (or to a keyed hash) is refused.
//
// What is signed is the report's canonical JSON without its seal (sorted
// keys, numbers verbatim, so re-indenting is not an edit and any change of
// any field is), prefixed with the schema's signing context. The JUnit and
// HTML files made from a report are listed in it (Report.Files) with their
// SHA-256, so the signature covers them too (VerifyFiles).

// Environment variables the CLI and Run read.
const (
	// SignKeyEnv names the lab's private key file (from `switchyard
	// conformance keygen`); when set, reports are signed with it.
	SignKeyEnv = "SWITCHYARD_CONFORMANCE_SIGN_KEY"
	// LabKeyEnv names the lab's public key file verify-report checks
	// signatures against when --lab-key is not given.
	LabKeyEnv = "SWITCHYARD_CONFORMANCE_LAB_KEY"
)

// Seal algorithms.
const (
	// AlgEd25519 is a lab's signature: a certificate.
	AlgEd25519 = "ed25519"
	// AlgSHA256 is a plain digest: an integrity checksum, not a certificate.
	AlgSHA256 = "sha256"
)

// Key file names keygen writes.
const (
	PrivateKeyFile = "lab.key"
	PublicKeyFile  = "lab.pub"
)

// signingContext separates report signatures from anything else the same
// key might ever sign (and one schema version's reports from another's).
var signingContext = []byte(SchemaVersion + " signature\n")

// Seal is what makes a report's content checkable after the fact.
type Seal struct {
	// Algorithm is AlgEd25519 (signed by a lab) or AlgSHA256 (a checksum).
	Algorithm string `json:"algorithm"`
	// KeyID names the lab key that signed (KeyID of its public key).
	KeyID string `json:"key_id,omitempty"`
	// Digest is the SHA-256 of the signed content, hex (always present).
	Digest string `json:"digest"`
	// Signature is the Ed25519 signature, base64 (AlgEd25519 only).
	Signature string `json:"signature,omitempty"`
}

// Errors Verify, VerifyFiles and VerifyBinary return (wrapped).
var (
	// ErrTampered: the content does not match its digest or signature.
	ErrTampered = errors.New("report was edited after it was sealed")
	// ErrUnsigned: a lab key was given but the report carries no signature
	// (only a digest anyone can recompute).
	ErrUnsigned = errors.New("NOT CERTIFIED: unsigned")
	// ErrWrongKey: the report is sealed by another key or algorithm than
	// the lab key the verifier holds.
	ErrWrongKey = errors.New("NOT CERTIFIED: not signed by the lab key")
	// ErrInconsistent: the stated totals, completeness or verdict disagree
	// with what the per-case results and gap declarations give.
	ErrInconsistent = errors.New("report disagrees with its own results")
	// ErrBinaryMismatch: a binary presented as the certified one is not.
	ErrBinaryMismatch = errors.New("binary is not the one the report certifies")
)

// KeyID is a short, stable name for a lab's public key: "ed25519:" and the
// first 16 hex digits of the SHA-256 of the raw key.
func KeyID(pub ed25519.PublicKey) string {
	s := sha256.Sum256(pub)
	return AlgEd25519 + ":" + hex.EncodeToString(s[:8])
}

// GenerateKeyPair writes a new lab key pair into dir: PrivateKeyFile
// (PKCS #8 PEM, mode 0600) and PublicKeyFile (PKIX PEM, 0644), the formats
// openssl reads. It refuses to overwrite either file.
func GenerateKeyPair(dir string) (privPath, pubPath string, pub ed25519.PublicKey, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", nil, fmt.Errorf("conformance: generating a key: %w", err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", "", nil, fmt.Errorf("conformance: encoding the private key: %w", err)
	}
	pb, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", "", nil, fmt.Errorf("conformance: encoding the public key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", nil, fmt.Errorf("conformance: keygen: %w", err)
	}
	privPath, pubPath = filepath.Join(dir, PrivateKeyFile), filepath.Join(dir, PublicKeyFile)
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", nil, fmt.Errorf("conformance: keygen: %s exists; refusing to overwrite a lab key", p)
		}
	}
	if err := writeNew(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		return "", "", nil, err
	}
	if err := writeNew(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pb}), 0o644); err != nil {
		_ = os.Remove(privPath)
		return "", "", nil, err
	}
	return privPath, pubPath, pub, nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("conformance: keygen: %w", err)
	}
	if err := f.Chmod(mode); err != nil { // the umask may have narrowed it; never widened
		f.Close()
		return fmt.Errorf("conformance: keygen: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("conformance: keygen: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("conformance: keygen: %w", err)
	}
	return nil
}

func pemBlock(data []byte, want, path string) ([]byte, error) {
	b, rest := pem.Decode(data)
	if b == nil || b.Type != want || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("conformance: %s is not a PEM %q block", path, want)
	}
	return b.Bytes, nil
}

// ParsePrivateKey decodes a lab private key file's content (PKCS #8 PEM).
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	return parseKey[ed25519.PrivateKey](data, "PRIVATE KEY", "private key", x509.ParsePKCS8PrivateKey)
}

// ParsePublicKey decodes a lab public key file's content (PKIX PEM).
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	return parseKey[ed25519.PublicKey](data, "PUBLIC KEY", "public key", x509.ParsePKIXPublicKey)
}

// parseKey decodes the PEM block of that type in data with parse and
// requires an Ed25519 key (K).
func parseKey[K ed25519.PrivateKey | ed25519.PublicKey](data []byte, block, what string, parse func([]byte) (any, error)) (K, error) {
	der, err := pemBlock(data, block, "the "+what)
	if err != nil {
		return nil, err
	}
	k, err := parse(der)
	if err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", what, err)
	}
	key, ok := k.(K)
	if !ok {
		return nil, fmt.Errorf("conformance: %s is a %T, want Ed25519", what, k)
	}
	return key, nil
}

// ReadPrivateKey reads a lab private key file. It refuses a file that
// others than its owner may read (as ssh does): the key is what makes a
// certificate unforgeable.
func ReadPrivateKey(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: signing key: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("conformance: signing key: %w", err)
	}
	if goruntime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("conformance: signing key %s has mode %v: others may read it (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	data, err := readBounded(f, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("conformance: signing key %s: %w", path, err)
	}
	k, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return k, nil
}

// ReadPublicKey reads a lab public key file.
func ReadPublicKey(path string) (ed25519.PublicKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: lab key: %w", err)
	}
	defer f.Close()
	data, err := readBounded(f, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("conformance: lab key %s: %w", path, err)
	}
	k, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return k, nil
}

// canonical is a report's JSON with the named top-level fields removed,
// re-encoded with sorted keys and numbers kept verbatim, so any edit of any
// field (even one this version does not know) changes it.
func canonical(data []byte, drop ...string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("conformance: report is not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("conformance: report has data after its JSON object")
	}
	for _, k := range drop {
		delete(v, k)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ContentDigest is the SHA-256 of the report's canonical content without
// its seal and file list: the digest the JUnit and HTML files made from it
// carry, so each names the report it renders.
func (r *Report) ContentDigest() (string, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	canon, err := canonical(raw, "seal", "files")
	if err != nil {
		return "", err
	}
	return hexSHA256(canon), nil
}

// Marshal seals the report with a plain SHA-256 digest (an integrity
// checksum, not a certificate: see Sign) and returns its indented JSON.
func (r *Report) Marshal() ([]byte, error) { return r.Sign(nil) }

// Sign seals the report with an Ed25519 signature by key (nil: a plain
// digest only) and returns its indented JSON. It refuses a report whose
// totals or verdict disagree with its results, so a lab never signs one.
func (r *Report) Sign(key ed25519.PrivateKey) ([]byte, error) {
	if key != nil && len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("conformance: signing key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("conformance: refusing to seal: %w", err)
	}
	r.Seal = nil
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if r.Seal, err = sealOf(raw, key); err != nil {
		return nil, err
	}
	return json.MarshalIndent(r, "", " ")
}

// sealOf seals a report's JSON (its "seal" field, if any, ignored).
func sealOf(raw []byte, key ed25519.PrivateKey) (*Seal, error) {
	canon, err := canonical(raw, "seal")
	if err != nil {
		return nil, err
	}
	s := Seal{Algorithm: AlgSHA256, Digest: hexSHA256(canon)}
	if key != nil {
		pub := key.Public().(ed25519.PublicKey)
		s.Algorithm, s.KeyID = AlgEd25519, KeyID(pub)
		s.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, append(append([]byte{}, signingContext...), canon...)))
	}
	return &s, nil
}

// Verified is a report Verify accepted, and what was established.
type Verified struct {
	*Report
	// Signed: the Ed25519 signature was checked against the lab key given.
	Signed bool
}

// Verify checks a report file's schema, seal and internal consistency and
// returns the report. With labKey it is a certificate check: the report
// must carry an Ed25519 signature by that key (ErrUnsigned for a plain
// digest, ErrWrongKey for another key or algorithm, ErrTampered for a
// signature that does not match). Without labKey only the digest is
// checked, which proves nothing against a forger (Verified.Signed false).
// Either way the totals, completeness and verdict are recomputed from the
// per-case results and the gap declarations (ErrInconsistent).
func Verify(data []byte, labKey ed25519.PublicKey) (*Verified, error) {
	if labKey != nil && len(labKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("conformance: lab key has %d bytes, want %d", len(labKey), ed25519.PublicKeySize)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("conformance: not a report: %w", err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("conformance: report schema %q, this build reads %q", r.Schema, SchemaVersion)
	}
	if r.Seal == nil {
		if labKey != nil {
			return nil, fmt.Errorf("conformance: %w: the report has no seal at all", ErrUnsigned)
		}
		return nil, fmt.Errorf("conformance: %w: the report has no seal", ErrTampered)
	}
	canon, err := canonical(data, "seal")
	if err != nil {
		return nil, err
	}
	s := r.Seal
	got := hexSHA256(canon)
	v := &Verified{Report: &r}
	if labKey != nil {
		switch {
		case s.Algorithm == AlgSHA256 || (s.Algorithm == AlgEd25519 && s.Signature == ""):
			return nil, fmt.Errorf("conformance: %w: the report carries only a %s digest, which anyone can recompute after editing it; it was not signed by a lab key", ErrUnsigned, AlgSHA256)
		case s.Algorithm != AlgEd25519:
			return nil, fmt.Errorf("conformance: %w: sealed with %q, the lab key %s is Ed25519", ErrWrongKey, s.Algorithm, KeyID(labKey))
		case s.KeyID != KeyID(labKey):
			return nil, fmt.Errorf("conformance: %w: signed by %q, the lab key is %s", ErrWrongKey, s.KeyID, KeyID(labKey))
		}
		sig, err := base64.StdEncoding.DecodeString(s.Signature)
		if err != nil || len(sig) != ed25519.SignatureSize {
			return nil, fmt.Errorf("conformance: %w: the signature is not %d base64 bytes", ErrTampered, ed25519.SignatureSize)
		}
		if !ed25519.Verify(labKey, append(append([]byte{}, signingContext...), canon...), sig) {
			return nil, fmt.Errorf("conformance: %w: the Ed25519 signature by %s does not match the content", ErrTampered, s.KeyID)
		}
		v.Signed = true
	} else if s.Algorithm != AlgSHA256 && s.Algorithm != AlgEd25519 {
		return nil, fmt.Errorf("conformance: unknown seal algorithm %q (this build knows %s and %s)", s.Algorithm, AlgEd25519, AlgSHA256)
	}
	// the digest is checked in both modes: with a key it is redundant with
	// the signature, but names the edit the same way
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.Digest)) != 1 {
		return nil, fmt.Errorf("conformance: %w (digest %s, content hashes to %s)", ErrTampered, short(s.Digest), short(got))
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return v, nil
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

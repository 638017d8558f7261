// Fuzz tests: the verifier and the header parsers never panic on any
// input, and what they accept is consistent (a parsed signature header has
// no empty entry; a Verify that passes means one signature really is the
// MAC under the secret). The seed corpora in testdata/fuzz run as
// regression tests in plain `go test`.
package webhook

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func FuzzParseSignatureHeader(f *testing.F) {
	for _, s := range []string{specSig, specSig + " v1a,xyz", "", " ", "v1", ",", "v1,", ",x", "v1,a  v1,b\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		sigs, err := ParseSignatureHeader(v)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(sigs) == 0 || len(sigs) > MaxSignatures {
			t.Fatalf("%d signatures accepted", len(sigs))
		}
		for _, s := range sigs {
			if s.Version == "" || s.Value == "" || strings.ContainsAny(s.Version+s.Value, " \t\n") {
				t.Fatalf("bad entry %+v from %q", s, v)
			}
		}
	})
}

func FuzzParseSecret(f *testing.F) {
	for _, s := range []string{specSecret, "whsec_", "whsec_====", "MfKQ9r8G", "whsec_" + strings.Repeat("A", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sec, err := ParseSecret(s)
		if err != nil {
			if !errors.Is(err, ErrSecret) {
				t.Fatalf("error %v does not wrap ErrSecret", err)
			}
			if len(s) > 16 && strings.Contains(err.Error(), s[6:]) {
				t.Fatalf("error repeats the secret: %v", err)
			}
			return
		}
		if n := len(sec.key); n < MinSecretBytes || n > MaxSecretBytes {
			t.Fatalf("accepted a %d-byte key", n)
		}
		if again, err := ParseSecret(sec.Text()); err != nil || !bytes.Equal(again.key, sec.key) {
			t.Fatalf("Text() does not round-trip: %v", err)
		}
	})
}

// FuzzVerify feeds arbitrary headers and bodies to Verify under the spec
// secret. Anything it accepts must carry the true MAC of what it got.
func FuzzVerify(f *testing.F) {
	f.Add(specID, "1614265330", specSig, []byte(specBody))
	f.Add(specID, "1614265330", specSig+" v1,AAAA", []byte(specBody))
	f.Add("", "", "", []byte(nil))
	f.Add("a", "99999999999999", "v1,=", []byte("x"))
	sec := mustSecret(f, specSecret)
	sg := mustSigner(f, specSecret)
	now := time.Unix(specTS, 0)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		err := Verify(h, body, now, 0, sec)
		if err == nil {
			want := sg.Sign(id, now, body)
			if t2, _ := ParseTimestamp(ts); !t2.Equal(now) {
				want = sg.Sign(id, t2, body)
			}
			if !strings.Contains(" "+strings.Join(strings.Fields(sig), " ")+" ", " "+want+" ") {
				t.Fatalf("accepted %q for id %q ts %q without the true signature %q", sig, id, ts, want)
			}
			return
		}
		for _, e := range []error{ErrMalformed, ErrTooOld, ErrTooNew, ErrNoSignature} {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("error %v wraps none of the verification errors", err)
	})
}

// This file proves each limit of the webhook package at its exact edge:
// the largest value the doc allows passes and one more is refused, and
// the errors name what is wrong (which entry, how far in the future).
package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSignatureHeaderLengthEdge(t *testing.T) {
	// One entry whose value pads the header to exactly the limit: parsing
	// reads it; one byte more is malformed.
	atLimit := "v1," + strings.Repeat("A", MaxSignatureHeaderBytes-len("v1,"))
	if sigs, err := ParseSignatureHeader(atLimit); err != nil || len(sigs) != 1 {
		t.Errorf("ParseSignatureHeader(%d bytes) = %d entries, %v; want 1 entry", len(atLimit), len(sigs), err)
	}
	if _, err := ParseSignatureHeader(atLimit + "A"); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParseSignatureHeader(%d bytes) = %v, want ErrMalformed", len(atLimit)+1, err)
	}
}

func TestSignatureHeaderErrorNamesTheBadEntry(t *testing.T) {
	_, err := ParseSignatureHeader(specSig + " " + specSig + " nocomma")
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "entry 3 ") {
		t.Errorf("ParseSignatureHeader(third entry bad) = %v, want ErrMalformed naming entry 3", err)
	}
}

func TestTimestampDigitsEdge(t *testing.T) {
	twelve := strings.Repeat("9", 12)
	ts, err := ParseTimestamp(twelve)
	if err != nil || ts.Unix() != 999999999999 {
		t.Errorf("ParseTimestamp(%s) = %v, %v; want Unix 999999999999", twelve, ts.Unix(), err)
	}
	if _, err := ParseTimestamp(twelve + "9"); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParseTimestamp(13 digits) = %v, want ErrMalformed", err)
	}
}

func TestCheckIDRefusesDelete(t *testing.T) {
	// 0x7e ('~') is the last printable byte; 0x7f (DEL) is a control byte.
	if err := CheckID("a~"); err != nil {
		t.Errorf("CheckID(\"a~\"): %v", err)
	}
	if err := CheckID("a\x7f"); !errors.Is(err, ErrID) {
		t.Errorf("CheckID(\"a\\x7f\") = %v, want ErrID", err)
	}
}

func TestNewSignerTakesMaxSigners(t *testing.T) {
	secrets := make([]Secret, MaxSigners)
	for i := range secrets {
		secrets[i] = mustSecret(t, NewSecret())
	}
	sg, err := NewSigner(secrets...)
	if err != nil {
		t.Fatalf("NewSigner(%d secrets): %v", MaxSigners, err)
	}
	if n := len(strings.Fields(sg.Sign("evt_1", time.Unix(specTS, 0), nil))); n != MaxSigners {
		t.Errorf("Sign with %d secrets gave %d signatures", MaxSigners, n)
	}
}

func TestParseSecretKeyLengthEdges(t *testing.T) {
	for _, n := range []int{MinSecretBytes, MaxSecretBytes} {
		text := SecretPrefix + base64.StdEncoding.EncodeToString(make([]byte, n))
		if _, err := ParseSecret(text); err != nil {
			t.Errorf("ParseSecret(%d-byte key): %v", n, err)
		}
	}
	for _, n := range []int{MinSecretBytes - 1, MaxSecretBytes + 1} {
		text := SecretPrefix + base64.StdEncoding.EncodeToString(make([]byte, n))
		if _, err := ParseSecret(text); !errors.Is(err, ErrSecret) {
			t.Errorf("ParseSecret(%d-byte key) = %v, want ErrSecret", n, err)
		}
	}
}

func TestDefaultToleranceIsFiveMinutes(t *testing.T) {
	sec := mustSecret(t, specSecret)
	h := http.Header{}
	h.Set(HeaderID, specID)
	h.Set(HeaderTimestamp, strconv.Itoa(specTS))
	h.Set(HeaderSignature, specSig)
	signed := time.Unix(specTS, 0)
	if err := Verify(h, []byte(specBody), signed.Add(5*time.Minute), 0, sec); err != nil {
		t.Errorf("Verify 5 minutes after signing, tolerance 0: %v", err)
	}
	if err := Verify(h, []byte(specBody), signed.Add(5*time.Minute+time.Second), 0, sec); !errors.Is(err, ErrTooOld) {
		t.Errorf("Verify 5m1s after signing, tolerance 0 = %v, want ErrTooOld", err)
	}
}

func TestTooNewErrorSaysHowFarAhead(t *testing.T) {
	sec := mustSecret(t, specSecret)
	h := http.Header{}
	h.Set(HeaderID, specID)
	h.Set(HeaderTimestamp, strconv.Itoa(specTS))
	h.Set(HeaderSignature, specSig)
	err := Verify(h, []byte(specBody), time.Unix(specTS, 0).Add(-10*time.Minute), time.Minute, sec)
	if !errors.Is(err, ErrTooNew) || !strings.Contains(err.Error(), "signed 10m0s after now") {
		t.Errorf("Verify 10 minutes early = %v, want ErrTooNew saying \"signed 10m0s after now\"", err)
	}
}

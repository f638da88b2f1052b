package main

import "testing"

func TestLocaleLanguage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, ""},
		{map[string]string{"LANG": "POSIX"}, ""},
		{map[string]string{"LANG": "de_DE.UTF-8"}, "de-DE"},
		{map[string]string{"LANG": "fr_FR@euro"}, "fr-FR"},
		{map[string]string{"LANG": "de_DE.UTF-8", "LC_MESSAGES": "C"}, ""},
		{map[string]string{"LANG": "C.UTF-8", "LC_ALL": "de_AT.UTF-8"}, "de-AT"},
		{map[string]string{}, ""},
	} {
		if got := localeLanguage(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.env, got, tc.want)
		}
	}
}

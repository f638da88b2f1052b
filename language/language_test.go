package language_test

import (
	"testing"

	"github.com/canonkb/canon/language"
)

// anyLanguage chooses among every language the detector knows.
var anyLanguage language.Detector

// shortTexts are handbook chunks and questions of the kind canon stores and is
// asked, by language: detection must name the language of each chunk-sized text
// (or say it cannot), never another language confidently.
var shortTexts = map[string][]string{
	"en": {
		"Rotate the signing keys every ninety days and record the rotation in the audit log.",
		"The deploy pipeline runs the migrations before it starts the new release on each node.",
		"How do I renew the TLS certificate of the gateway?",
		"Backups are taken nightly and kept for thirty days in the second region.",
		"When the queue grows beyond its limit, the workers shed the oldest jobs first.",
		"Which team owns the billing service?",
	},
	"de": {
		"Die Signaturschlüssel werden alle neunzig Tage erneuert und die Erneuerung wird im Prüfprotokoll vermerkt.",
		"Die Bereitstellung führt zuerst die Migrationen aus und startet dann die neue Version auf jedem Knoten.",
		"Wie erneuere ich das Zertifikat des Gateways?",
		"Sicherungen werden jede Nacht erstellt und dreißig Tage lang in der zweiten Region aufbewahrt.",
		"Wenn die Warteschlange ihre Grenze überschreitet, verwerfen die Arbeiter zuerst die ältesten Aufträge.",
		"Welches Team ist für den Abrechnungsdienst zuständig?",
	},
	"fr": {
		"Les clés de signature sont renouvelées tous les quatre-vingt-dix jours et le renouvellement est noté dans le journal d'audit.",
		"Le déploiement exécute d'abord les migrations, puis démarre la nouvelle version sur chaque nœud.",
		"Comment renouveler le certificat de la passerelle ?",
		"Les sauvegardes sont faites chaque nuit et conservées trente jours dans la deuxième région.",
		"Quand la file d'attente dépasse sa limite, les travailleurs abandonnent d'abord les tâches les plus anciennes.",
		"Quelle équipe est responsable du service de facturation ?",
	},
	"es": {
		"Las claves de firma se renuevan cada noventa días y la renovación se anota en el registro de auditoría.",
		"¿Qué equipo es responsable del servicio de facturación?",
	},
}

// TestDetectShortTexts measures detection on chunk-sized texts and questions:
// every confident answer is right, and most texts get one.
func TestDetectShortTexts(t *testing.T) {
	total, confident := 0, 0
	for want, texts := range shortTexts {
		for _, text := range texts {
			total++
			got, ok := anyLanguage.Detect(text)
			if !ok {
				t.Logf("%s: no confident answer for %q", want, text)
				continue
			}
			confident++
			if got != want {
				t.Errorf("Detect(%q) = %s, want %s", text, got, want)
			}
		}
	}
	t.Logf("confident on %d of %d short texts", confident, total)
	if confident*10 < total*8 {
		t.Errorf("confident on %d of %d short texts, want at least 80%%", confident, total)
	}
}

func TestOf(t *testing.T) {
	german := "Die Signaturschlüssel werden alle neunzig Tage erneuert und die Erneuerung wird im Prüfprotokoll vermerkt."
	for _, tc := range []struct {
		name, declared, project, text, want string
	}{
		{"declared wins", "fr", "de", german, "fr"},
		{"project next", "", "fr", german, "fr"},
		{"detected next", "", "", german, "de"},
		{"english fallback", "", "", "E5032 KB_RRF_K", "en"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := anyLanguage.Of(tc.declared, tc.project, tc.text); got != tc.want {
				t.Errorf("Of = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"de", "de", ""},
		{" FR ", "fr", ""},
		{"deu", "", `invalid language "deu": want a two-letter ISO 639-1 code such as en, de or fr`},
		{"", "", `invalid language "": want a two-letter ISO 639-1 code such as en, de or fr`},
	} {
		got, err := language.Normalize(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("Normalize(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestDetectorChoosesAmongItsLanguages: a detector limited to some languages
// never answers another.
func TestDetectorChoosesAmongItsLanguages(t *testing.T) {
	d := language.NewDetector([]string{"en", "de", "fr", "xx"})
	for want, texts := range shortTexts {
		for _, text := range texts {
			got, ok := d.Detect(text)
			if ok && got != want && want != "es" || ok && want == "es" && got == "es" {
				t.Errorf("Detect(%q) = %s among en, de, fr", text, got)
			}
		}
	}
}

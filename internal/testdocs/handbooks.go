package testdocs

// Handbooks returns small German, French and English handbooks, each page
// keyed by its path (the directory is its language): the same facts in each
// language, worded so that only a stemmer matches a question's inflected forms
// to them (erneuere/erneuern, Datenbank/Datenbanken, renouveler/renouvelle),
// with a German compound (Signaturschlüssel), stop words, and the identifiers
// E5032 and KB_RRF_K. Some pages declare `lang:`, the others leave it to
// detection.
func Handbooks() map[string]string {
	return map[string]string{
		"de/zertifikate.md": `---
title: Zertifikate
lang: de
---
# Zertifikate

Die Zertifikate des Gateways laufen nach einem Jahr ab. Wir erneuern sie zwei Wochen
vorher mit dem Befehl canon-cert und tragen das neue Ablaufdatum in das Betriebshandbuch ein.
`,
		"de/datenbanken.md": `---
title: Sicherung
---
# Sicherung

Alle Datenbanken werden jede Nacht gesichert und dreißig Tage lang in der zweiten Region
aufbewahrt. Die Wiederherstellung einer Sicherung dauert ungefähr eine Stunde.
`,
		"de/fehler.md": `---
title: Fehler E5032
lang: de
---
# Fehler E5032

Der Fehler E5032 bedeutet, dass der Parameter KB_RRF_K in der Konfigurationsdatei fehlt.
Setzen Sie ihn und starten Sie den Dienst danach neu.
`,
		"de/signatur.md": `---
title: Signaturen
lang: de
---
# Signaturen

Der Signaturschlüssel wird alle neunzig Tage gewechselt. Die Wechsel werden im
Prüfprotokoll vermerkt und vom Sicherheitsteam bestätigt.
`,
		"fr/certificats.md": `---
title: Certificats
lang: fr
---
# Certificats

Les certificats de la passerelle expirent après un an. L'équipe plateforme les renouvelle
deux semaines avant avec la commande canon-cert et note la nouvelle date dans le manuel.
`,
		"fr/sauvegardes.md": `---
title: Sauvegardes
---
# Sauvegardes

Toutes les bases de données sont sauvegardées chaque nuit et conservées trente jours dans la
deuxième région. La restauration d'une sauvegarde prend environ une heure.
`,
		"fr/erreurs.md": `---
title: Erreur E5032
lang: fr
---
# Erreur E5032

L'erreur E5032 signifie que le paramètre KB_RRF_K manque dans le fichier de configuration.
Définissez-le puis redémarrez le service.
`,
		"en/certificates.md": `---
title: Certificates
---
# Certificates

The gateway certificates expire after one year. The platform team renews them two weeks
ahead with the canon-cert command and writes the new expiry date into the runbook.
`,
		"en/backups.md": `---
title: Backups
---
# Backups

Every database is backed up each night and kept for thirty days in the second region.
Restoring a backup takes about an hour.
`,
		"en/errors.md": `---
title: Error E5032
lang: en
---
# Error E5032

Error E5032 means the parameter KB_RRF_K is missing from the configuration file. Set it,
then restart the service.
`,
	}
}

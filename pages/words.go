package pages

// The pages speak English, German, French and Spanish. Each language is one
// value of words below; TestWordsAreComplete keeps the four in step (every
// word given, the same format verbs).

// words are the pages' own words in one language: headings, buttons,
// statuses and errors. The policy's words (the card's sentence, the reply,
// field titles) come from the policy, in the person's language where it
// gives them.
type words struct {
	// Heading
	WaitingCard     string // the card's heading while it waits
	WaitingForm     string // the form's heading while it waits
	AssistantWants  string // above a waiting card's sentence
	AssistantWanted string // above an answered card's sentence
	AssistantAsks   string // above a waiting form's sentence
	AssistantAsked  string // above an answered form's sentence
	// AssistantOfWants and AssistantOfWanted stand above a card an
	// approver answers: %s is whose conversation it came from.
	AssistantOfWants  string
	AssistantOfWanted string
	WaitingApprover   string // the card's heading for its owner under four_eyes
	FourEyesNote      string // under that heading: why there is no Confirm
	FourEyesRefused   string // the owner's own confirmation refused (four_eyes)
	WaitingList       string // the heading of the list of what waits for the person
	ListEmpty         string // that list with nothing in it
	QuestionOf        string // which of several questions (%d of %d)
	YourAnswers       string // the heading when several questions were answered
	AlreadyAnswered   string // the heading of the answered questions below a waiting one
	NothingWaiting    string // a link with nothing to answer
	CannotShow        string // a waiting form that cannot be built now
	FixFields         string // the notice above a form sent back with errors
	Resumes           string // the app's answer waits: the assistant goes on once the person answers

	// EditLegend heads a card's editable fields (card.editable);
	// NotEditable refuses a confirmation that changes any other argument.
	EditLegend  string
	NotEditable string

	// Buttons
	Confirm string
	Decline string
	Submit  string
	NotNow  string

	// Declining with a note (an action's decline_note)
	NoteLabel   string // the note's label, beside Decline
	NoteHelp    string // under it: how long, who reads it, that it is not kept
	NoteRefused string // a note the gate did not take (too long, or not asked for)

	// The list of what waits (list.go)
	WaitedFor  string // how long it has waited: %s is a duration
	ExpiresIn  string // when it expires: %s is a duration
	OlderPage  string // the link to the next page of the list
	NewestPage string // the link back to its first page
	Minutes    string // a duration in minutes: %d
	Hours      string // a duration in hours and minutes: %d, %d

	// Fields
	Required       string // after a required field's label
	Choose         string // a choice's empty option
	Shortened      string // the mark on a value cut short
	ShortenedTitle string

	// Statuses: what became of an answered hold: a head, then a detail
	Confirmed                  string
	Submitted                  string
	RunsAfterOthers            string
	Running                    string
	RunsWhenAssistantContinues string // an MCP confirmation: the client's retry runs it
	Done                       string
	DoneUnread                 string
	Declined                   string
	ClosedUnanswered           string
	Expired                    string
	NothingRan                 string
	MovedOn                    string
	MovedOnDetail              string
	NotRun                     string
	Changed                    string
	UncheckedNotFound          string
	UncheckedForbidden         string
	UncheckedDown              string
	UncheckedUnreadable        string
	AppRefused                 string // %d is the app's HTTP status
	AppRefusedValues           string
	AppUnreachable             string
	GateCouldNotRun            string
	PolicyChanged              string // the policy dropped or changed the action after the person was asked
	MayHaveRun                 string
	NoAnswer                   string
	AppFailed                  string // %d is the app's HTTP status
	GateStopped                string
	CannotTell                 string

	// Error pages
	NotAccepted        string
	NotFound           string
	SignInTitle        string
	NoSuchPage         string
	SignIn             string
	MethodNotAllowed   string
	NoSuchConfirmation string
	CannotReadNow      string
	CrossSite          string
	Unreadable         string
	BadToken           string
	AnswerRefused      string
	CannotTakeAnswers  string
	ShowQuestion       string // a link back to the question

	// Field errors: the rules a form answer broke, said to the person (see rules.go)
	RuleRequired string
	RuleMinChars string
	RuleMaxChars string
	RuleMinItems string
	RuleMaxItems string
	RuleChoice   string
	RuleUnique   string
	RuleInteger  string
	RuleNumber   string
	RuleMin      string // %s is the bound
	RuleMax      string // %s is the bound
	RuleGreater  string // %s is the bound
	RuleLess     string // %s is the bound
	RuleEmail    string
	RuleURL      string
	RuleDate     string
	RuleDateTime string
}

var english = words{
	WaitingCard:                "Waiting for your confirmation",
	WaitingForm:                "Waiting for your answer",
	AssistantWants:             "Your assistant wants to:",
	AssistantWanted:            "Your assistant asked to:",
	AssistantAsks:              "Your assistant asks:",
	AssistantAsked:             "Your assistant asked:",
	AssistantOfWants:           "%s's assistant wants to:",
	AssistantOfWanted:          "%s's assistant asked to:",
	WaitingApprover:            "Waiting for an approver",
	FourEyesNote:               "Someone else must confirm this. You can decline it.",
	FourEyesRefused:            "You may not confirm your own request: someone else must. Nothing ran.",
	WaitingList:                "Waiting for your answer",
	ListEmpty:                  "Nothing is waiting for your answer.",
	QuestionOf:                 "Question %d of %d",
	YourAnswers:                "Your answers",
	AlreadyAnswered:            "Already answered",
	NothingWaiting:             "Nothing is waiting for you here.",
	CannotShow:                 "This question cannot be shown right now.",
	FixFields:                  "Please fix the fields marked below. Nothing ran.",
	Resumes:                    "Your assistant is waiting for your answer and continues as soon as you have answered.",
	EditLegend:                 "You may correct these before you confirm.",
	NotEditable:                "This answer changes something that cannot be changed here. Nothing ran.",
	Confirm:                    "Confirm",
	Decline:                    "Decline",
	NoteLabel:                  "Note to your assistant (optional)",
	NoteHelp:                   "Up to 500 characters, sent with Decline. Your assistant reads it once; it is not kept.",
	NoteRefused:                "The note was not taken (at most 500 characters, and only where the card offers one); nothing was answered.",
	WaitedFor:                  "Waiting for %s",
	ExpiresIn:                  "expires in %s",
	OlderPage:                  "Older questions",
	NewestPage:                 "Newest questions",
	Minutes:                    "%d min",
	Hours:                      "%d h %d min",
	Submit:                     "Submit",
	NotNow:                     "Not now",
	Required:                   "(required)",
	Choose:                     "Choose…",
	Shortened:                  "shortened",
	ShortenedTitle:             "The full value is longer than shown here.",
	Confirmed:                  "Confirmed.",
	Submitted:                  "Submitted.",
	RunsAfterOthers:            "It runs once you have answered the other questions here.",
	Running:                    "The app is being asked now.",
	RunsWhenAssistantContinues: "It runs once, when your assistant continues.",
	Done:                       "Done.",
	DoneUnread:                 "Done, but the app's answer could not be read in full.",
	Declined:                   "Declined.",
	ClosedUnanswered:           "Closed without answering.",
	Expired:                    "Expired.",
	NothingRan:                 "Nothing ran.",
	MovedOn:                    "Closed.",
	MovedOnDetail:              "You moved on in the conversation, so nothing ran.",
	NotRun:                     "Not run.",
	Changed:                    "The record changed while waiting for your answer.",
	UncheckedNotFound:          "The record could not be checked again: it was not found.",
	UncheckedForbidden:         "The record could not be checked again: you may not read it.",
	UncheckedDown:              "The record could not be checked again: the app is unavailable.",
	UncheckedUnreadable:        "The record could not be checked again: it could not be read.",
	AppRefused:                 "The app refused it (HTTP %d).",
	AppRefusedValues:           "The app refused the values.",
	AppUnreachable:             "The app could not be reached.",
	GateCouldNotRun:            "The gate could not run it.",
	PolicyChanged:              "The gate's policy for this action changed after you were asked.",
	MayHaveRun:                 "It may or may not have run.",
	NoAnswer:                   "The app did not answer. It was not tried again.",
	AppFailed:                  "The app failed (HTTP %d). It was not tried again.",
	GateStopped:                "The gate stopped before the app answered. It was not tried again.",
	CannotTell:                 "The gate cannot tell what happened. It was not tried again.",
	NotAccepted:                "Not accepted",
	NotFound:                   "Not found",
	SignInTitle:                "Sign in",
	NoSuchPage:                 "There is no such page.",
	SignIn:                     "Sign in to answer.",
	MethodNotAllowed:           "This page takes only GET and POST.",
	NoSuchConfirmation:         "There is no such confirmation, or it is not yours.",
	CannotReadNow:              "The gate cannot read this confirmation right now. Try again in a moment.",
	CrossSite:                  "This answer came from another site and was not accepted. Nothing ran.",
	Unreadable:                 "The answer could not be read. Nothing ran.",
	BadToken:                   "This answer was not accepted. Nothing ran.",
	AnswerRefused:              "This answer was not accepted: the question was already answered, has expired, or is not yours. Nothing ran.",
	CannotTakeAnswers:          "The gate cannot take answers right now. Nothing ran.",
	ShowQuestion:               "Show the question",
	RuleRequired:               "Fill in this field.",
	RuleMinChars:               "Use at least %d characters.",
	RuleMaxChars:               "Use at most %d characters.",
	RuleMinItems:               "Choose at least %d.",
	RuleMaxItems:               "Choose at most %d.",
	RuleChoice:                 "Choose one of the options.",
	RuleUnique:                 "Choose each option only once.",
	RuleInteger:                "Enter a whole number.",
	RuleNumber:                 "Enter a number.",
	RuleMin:                    "Enter %s or more.",
	RuleMax:                    "Enter %s or less.",
	RuleGreater:                "Enter more than %s.",
	RuleLess:                   "Enter less than %s.",
	RuleEmail:                  "Enter a valid email address.",
	RuleURL:                    "Enter a valid web address.",
	RuleDate:                   "Enter a valid date, like 2026-12-01.",
	RuleDateTime:               "Enter a valid date and time, like 2026-12-01T09:00:00Z.",
}

var german = words{
	WaitingCard:                "Wartet auf Ihre Bestätigung",
	WaitingForm:                "Wartet auf Ihre Antwort",
	AssistantWants:             "Ihr Assistent möchte:",
	AssistantWanted:            "Ihr Assistent wollte:",
	AssistantAsks:              "Ihr Assistent fragt:",
	AssistantAsked:             "Ihr Assistent fragte:",
	AssistantOfWants:           "Der Assistent von %s möchte:",
	AssistantOfWanted:          "Der Assistent von %s wollte:",
	WaitingApprover:            "Wartet auf eine Freigabe",
	FourEyesNote:               "Eine andere Person muss das bestätigen. Sie können es ablehnen.",
	FourEyesRefused:            "Sie können Ihre eigene Anfrage nicht bestätigen: Das muss jemand anderes tun. Es wurde nichts ausgeführt.",
	WaitingList:                "Wartet auf Ihre Antwort",
	ListEmpty:                  "Nichts wartet auf Ihre Antwort.",
	QuestionOf:                 "Frage %d von %d",
	YourAnswers:                "Ihre Antworten",
	AlreadyAnswered:            "Bereits beantwortet",
	NothingWaiting:             "Hier wartet nichts auf Sie.",
	CannotShow:                 "Diese Frage kann gerade nicht angezeigt werden.",
	FixFields:                  "Bitte korrigieren Sie die markierten Felder. Es wurde nichts ausgeführt.",
	Resumes:                    "Ihr Assistent wartet auf Ihre Antwort und macht weiter, sobald Sie geantwortet haben.",
	EditLegend:                 "Sie können dies vor dem Bestätigen korrigieren.",
	NotEditable:                "Diese Antwort ändert etwas, das hier nicht geändert werden kann. Es wurde nichts ausgeführt.",
	Confirm:                    "Bestätigen",
	Decline:                    "Ablehnen",
	NoteLabel:                  "Notiz an Ihren Assistenten (freiwillig)",
	NoteHelp:                   "Bis zu 500 Zeichen, mit „Ablehnen“ gesendet. Ihr Assistent liest sie einmal; sie wird nicht aufbewahrt.",
	NoteRefused:                "Die Notiz wurde nicht angenommen (höchstens 500 Zeichen, und nur, wo die Karte eine anbietet); es wurde nichts beantwortet.",
	WaitedFor:                  "Wartet seit %s",
	ExpiresIn:                  "läuft in %s ab",
	OlderPage:                  "Ältere Fragen",
	NewestPage:                 "Neueste Fragen",
	Minutes:                    "%d min",
	Hours:                      "%d h %d min",
	Submit:                     "Absenden",
	NotNow:                     "Nicht jetzt",
	Required:                   "(Pflichtfeld)",
	Choose:                     "Bitte wählen…",
	Shortened:                  "gekürzt",
	ShortenedTitle:             "Der vollständige Wert ist länger als hier gezeigt.",
	Confirmed:                  "Bestätigt.",
	Submitted:                  "Abgeschickt.",
	RunsAfterOthers:            "Es wird ausgeführt, sobald Sie die anderen Fragen hier beantwortet haben.",
	Running:                    "Die App wird gerade angefragt.",
	RunsWhenAssistantContinues: "Es wird einmal ausgeführt, wenn Ihr Assistent fortfährt.",
	Done:                       "Erledigt.",
	DoneUnread:                 "Erledigt, aber die Antwort der App konnte nicht vollständig gelesen werden.",
	Declined:                   "Abgelehnt.",
	ClosedUnanswered:           "Ohne Antwort geschlossen.",
	Expired:                    "Abgelaufen.",
	NothingRan:                 "Es wurde nichts ausgeführt.",
	MovedOn:                    "Geschlossen.",
	MovedOnDetail:              "Sie haben das Gespräch fortgesetzt, daher wurde nichts ausgeführt.",
	NotRun:                     "Nicht ausgeführt.",
	Changed:                    "Der Datensatz hat sich geändert, während er auf Ihre Antwort wartete.",
	UncheckedNotFound:          "Der Datensatz konnte nicht erneut geprüft werden: Er wurde nicht gefunden.",
	UncheckedForbidden:         "Der Datensatz konnte nicht erneut geprüft werden: Sie dürfen ihn nicht lesen.",
	UncheckedDown:              "Der Datensatz konnte nicht erneut geprüft werden: Die App ist nicht erreichbar.",
	UncheckedUnreadable:        "Der Datensatz konnte nicht erneut geprüft werden: Er war nicht lesbar.",
	AppRefused:                 "Die App hat es abgelehnt (HTTP %d).",
	AppRefusedValues:           "Die App hat die Werte abgelehnt.",
	AppUnreachable:             "Die App war nicht erreichbar.",
	GateCouldNotRun:            "Das Gate konnte es nicht ausführen.",
	PolicyChanged:              "Die Regeln des Gates für diese Aktion wurden geändert, nachdem Sie gefragt wurden.",
	MayHaveRun:                 "Es wurde vielleicht ausgeführt, vielleicht auch nicht.",
	NoAnswer:                   "Die App hat nicht geantwortet. Es wurde nicht erneut versucht.",
	AppFailed:                  "Die App ist fehlgeschlagen (HTTP %d). Es wurde nicht erneut versucht.",
	GateStopped:                "Das Gate wurde angehalten, bevor die App antwortete. Es wurde nicht erneut versucht.",
	CannotTell:                 "Das Gate kann nicht sagen, was passiert ist. Es wurde nicht erneut versucht.",
	NotAccepted:                "Nicht angenommen",
	NotFound:                   "Nicht gefunden",
	SignInTitle:                "Anmelden",
	NoSuchPage:                 "Diese Seite gibt es nicht.",
	SignIn:                     "Melden Sie sich an, um zu antworten.",
	MethodNotAllowed:           "Diese Seite nimmt nur GET und POST an.",
	NoSuchConfirmation:         "Diese Bestätigung gibt es nicht, oder sie gehört nicht Ihnen.",
	CannotReadNow:              "Das Gate kann diese Bestätigung gerade nicht lesen. Versuchen Sie es gleich noch einmal.",
	CrossSite:                  "Diese Antwort kam von einer anderen Website und wurde nicht angenommen. Es wurde nichts ausgeführt.",
	Unreadable:                 "Die Antwort konnte nicht gelesen werden. Es wurde nichts ausgeführt.",
	BadToken:                   "Diese Antwort wurde nicht angenommen. Es wurde nichts ausgeführt.",
	AnswerRefused:              "Diese Antwort wurde nicht angenommen: Die Frage wurde bereits beantwortet, ist abgelaufen oder gehört nicht Ihnen. Es wurde nichts ausgeführt.",
	CannotTakeAnswers:          "Das Gate kann gerade keine Antworten annehmen. Es wurde nichts ausgeführt.",
	ShowQuestion:               "Zur Frage",
	RuleRequired:               "Bitte füllen Sie dieses Feld aus.",
	RuleMinChars:               "Verwenden Sie mindestens %d Zeichen.",
	RuleMaxChars:               "Verwenden Sie höchstens %d Zeichen.",
	RuleMinItems:               "Wählen Sie mindestens %d.",
	RuleMaxItems:               "Wählen Sie höchstens %d.",
	RuleChoice:                 "Wählen Sie eine der Optionen.",
	RuleUnique:                 "Wählen Sie jede Option nur einmal.",
	RuleInteger:                "Geben Sie eine ganze Zahl ein.",
	RuleNumber:                 "Geben Sie eine Zahl ein.",
	RuleMin:                    "Geben Sie %s oder mehr ein.",
	RuleMax:                    "Geben Sie %s oder weniger ein.",
	RuleGreater:                "Geben Sie mehr als %s ein.",
	RuleLess:                   "Geben Sie weniger als %s ein.",
	RuleEmail:                  "Geben Sie eine gültige E-Mail-Adresse ein.",
	RuleURL:                    "Geben Sie eine gültige Webadresse ein.",
	RuleDate:                   "Geben Sie ein gültiges Datum ein, z. B. 2026-12-01.",
	RuleDateTime:               "Geben Sie ein gültiges Datum mit Uhrzeit ein, z. B. 2026-12-01T09:00:00Z.",
}

var french = words{
	WaitingCard:                "En attente de votre confirmation",
	WaitingForm:                "En attente de votre réponse",
	AssistantWants:             "Votre assistant souhaite :",
	AssistantWanted:            "Votre assistant souhaitait :",
	AssistantAsks:              "Votre assistant demande :",
	AssistantAsked:             "Votre assistant demandait :",
	AssistantOfWants:           "L'assistant de %s souhaite :",
	AssistantOfWanted:          "L'assistant de %s souhaitait :",
	WaitingApprover:            "En attente d'une approbation",
	FourEyesNote:               "Une autre personne doit confirmer ceci. Vous pouvez le refuser.",
	FourEyesRefused:            "Vous ne pouvez pas confirmer votre propre demande : une autre personne doit le faire. Rien n'a été exécuté.",
	WaitingList:                "En attente de votre réponse",
	ListEmpty:                  "Rien n'attend votre réponse.",
	QuestionOf:                 "Question %d sur %d",
	YourAnswers:                "Vos réponses",
	AlreadyAnswered:            "Déjà répondu",
	NothingWaiting:             "Rien ne vous attend ici.",
	CannotShow:                 "Cette question ne peut pas être affichée pour le moment.",
	FixFields:                  "Veuillez corriger les champs signalés ci-dessous. Rien n'a été exécuté.",
	Resumes:                    "Votre assistant attend votre réponse et continuera dès que vous aurez répondu.",
	EditLegend:                 "Vous pouvez corriger ceci avant de confirmer.",
	NotEditable:                "Cette réponse modifie quelque chose qui ne peut pas être modifié ici. Rien n'a été exécuté.",
	Confirm:                    "Confirmer",
	Decline:                    "Refuser",
	NoteLabel:                  "Note pour votre assistant (facultative)",
	NoteHelp:                   "Jusqu'à 500 caractères, envoyée avec Refuser. Votre assistant la lit une fois ; elle n'est pas conservée.",
	NoteRefused:                "La note n'a pas été acceptée (500 caractères au plus, et seulement là où la carte en propose une) ; rien n'a été répondu.",
	WaitedFor:                  "En attente depuis %s",
	ExpiresIn:                  "expire dans %s",
	OlderPage:                  "Questions plus anciennes",
	NewestPage:                 "Questions les plus récentes",
	Minutes:                    "%d min",
	Hours:                      "%d h %d min",
	Submit:                     "Envoyer",
	NotNow:                     "Plus tard",
	Required:                   "(obligatoire)",
	Choose:                     "Choisir…",
	Shortened:                  "abrégé",
	ShortenedTitle:             "La valeur complète est plus longue que celle affichée ici.",
	Confirmed:                  "Confirmé.",
	Submitted:                  "Envoyé.",
	RunsAfterOthers:            "L'action s'exécutera dès que vous aurez répondu aux autres questions ici.",
	Running:                    "La demande est en cours auprès de l'application.",
	RunsWhenAssistantContinues: "L'action s'exécutera une fois, quand votre assistant continuera.",
	Done:                       "Terminé.",
	DoneUnread:                 "Terminé, mais la réponse de l'application n'a pas pu être lue entièrement.",
	Declined:                   "Refusé.",
	ClosedUnanswered:           "Fermé sans réponse.",
	Expired:                    "Expiré.",
	NothingRan:                 "Rien n'a été exécuté.",
	MovedOn:                    "Fermé.",
	MovedOnDetail:              "Vous êtes passé à la suite de la conversation, donc rien n'a été exécuté.",
	NotRun:                     "Non exécuté.",
	Changed:                    "L'enregistrement a changé en attendant votre réponse.",
	UncheckedNotFound:          "L'enregistrement n'a pas pu être vérifié à nouveau : il est introuvable.",
	UncheckedForbidden:         "L'enregistrement n'a pas pu être vérifié à nouveau : vous n'avez pas le droit de le lire.",
	UncheckedDown:              "L'enregistrement n'a pas pu être vérifié à nouveau : l'application est indisponible.",
	UncheckedUnreadable:        "L'enregistrement n'a pas pu être vérifié à nouveau : il n'a pas pu être lu.",
	AppRefused:                 "L'application l'a refusé (HTTP %d).",
	AppRefusedValues:           "L'application a refusé les valeurs.",
	AppUnreachable:             "L'application n'a pas pu être jointe.",
	GateCouldNotRun:            "La passerelle n'a pas pu l'exécuter.",
	PolicyChanged:              "Les règles de la passerelle pour cette action ont changé depuis qu'on vous a posé la question.",
	MayHaveRun:                 "L'action a peut-être été exécutée, peut-être pas.",
	NoAnswer:                   "L'application n'a pas répondu. Aucune nouvelle tentative n'a été faite.",
	AppFailed:                  "L'application a échoué (HTTP %d). Aucune nouvelle tentative n'a été faite.",
	GateStopped:                "La passerelle s'est arrêtée avant la réponse de l'application. Aucune nouvelle tentative n'a été faite.",
	CannotTell:                 "La passerelle ne peut pas dire ce qui s'est passé. Aucune nouvelle tentative n'a été faite.",
	NotAccepted:                "Non acceptée",
	NotFound:                   "Introuvable",
	SignInTitle:                "Connexion",
	NoSuchPage:                 "Cette page n'existe pas.",
	SignIn:                     "Connectez-vous pour répondre.",
	MethodNotAllowed:           "Cette page n'accepte que GET et POST.",
	NoSuchConfirmation:         "Cette confirmation n'existe pas, ou elle ne vous appartient pas.",
	CannotReadNow:              "La passerelle ne peut pas lire cette confirmation pour le moment. Réessayez dans un instant.",
	CrossSite:                  "Cette réponse venait d'un autre site et n'a pas été acceptée. Rien n'a été exécuté.",
	Unreadable:                 "La réponse n'a pas pu être lue. Rien n'a été exécuté.",
	BadToken:                   "Cette réponse n'a pas été acceptée. Rien n'a été exécuté.",
	AnswerRefused:              "Cette réponse n'a pas été acceptée : la question a déjà reçu une réponse, a expiré ou ne vous appartient pas. Rien n'a été exécuté.",
	CannotTakeAnswers:          "La passerelle ne peut pas accepter de réponses pour le moment. Rien n'a été exécuté.",
	ShowQuestion:               "Voir la question",
	RuleRequired:               "Veuillez remplir ce champ.",
	RuleMinChars:               "Utilisez au moins %d caractères.",
	RuleMaxChars:               "Utilisez au plus %d caractères.",
	RuleMinItems:               "Choisissez-en au moins %d.",
	RuleMaxItems:               "Choisissez-en au plus %d.",
	RuleChoice:                 "Choisissez l'une des options.",
	RuleUnique:                 "Choisissez chaque option une seule fois.",
	RuleInteger:                "Saisissez un nombre entier.",
	RuleNumber:                 "Saisissez un nombre.",
	RuleMin:                    "Saisissez %s ou plus.",
	RuleMax:                    "Saisissez %s ou moins.",
	RuleGreater:                "Saisissez plus de %s.",
	RuleLess:                   "Saisissez moins de %s.",
	RuleEmail:                  "Saisissez une adresse e-mail valide.",
	RuleURL:                    "Saisissez une adresse web valide.",
	RuleDate:                   "Saisissez une date valide, par exemple 2026-12-01.",
	RuleDateTime:               "Saisissez une date et une heure valides, par exemple 2026-12-01T09:00:00Z.",
}

var spanish = words{
	WaitingCard:                "Esperando tu confirmación",
	WaitingForm:                "Esperando tu respuesta",
	AssistantWants:             "Tu asistente quiere:",
	AssistantWanted:            "Tu asistente quería:",
	AssistantAsks:              "Tu asistente pregunta:",
	AssistantAsked:             "Tu asistente preguntó:",
	AssistantOfWants:           "El asistente de %s quiere:",
	AssistantOfWanted:          "El asistente de %s quería:",
	WaitingApprover:            "Esperando una aprobación",
	FourEyesNote:               "Otra persona debe confirmarlo. Puedes rechazarlo.",
	FourEyesRefused:            "No puedes confirmar tu propia solicitud: debe hacerlo otra persona. No se ejecutó nada.",
	WaitingList:                "Esperando tu respuesta",
	ListEmpty:                  "Nada espera tu respuesta.",
	QuestionOf:                 "Pregunta %d de %d",
	YourAnswers:                "Tus respuestas",
	AlreadyAnswered:            "Ya respondidas",
	NothingWaiting:             "Aquí no hay nada esperándote.",
	CannotShow:                 "Esta pregunta no se puede mostrar ahora.",
	FixFields:                  "Corrige los campos marcados abajo. No se ejecutó nada.",
	Resumes:                    "Tu asistente espera tu respuesta y continuará en cuanto hayas respondido.",
	EditLegend:                 "Puede corregir esto antes de confirmar.",
	NotEditable:                "Esta respuesta cambia algo que no se puede cambiar aquí. No se ejecutó nada.",
	Confirm:                    "Confirmar",
	Decline:                    "Rechazar",
	NoteLabel:                  "Nota para tu asistente (opcional)",
	NoteHelp:                   "Hasta 500 caracteres, enviada con Rechazar. Tu asistente la lee una vez; no se guarda.",
	NoteRefused:                "La nota no se aceptó (500 caracteres como máximo, y solo donde la tarjeta ofrece una); no se respondió nada.",
	WaitedFor:                  "Esperando desde hace %s",
	ExpiresIn:                  "caduca en %s",
	OlderPage:                  "Preguntas anteriores",
	NewestPage:                 "Preguntas más recientes",
	Minutes:                    "%d min",
	Hours:                      "%d h %d min",
	Submit:                     "Enviar",
	NotNow:                     "Ahora no",
	Required:                   "(obligatorio)",
	Choose:                     "Elige…",
	Shortened:                  "acortado",
	ShortenedTitle:             "El valor completo es más largo de lo que se muestra aquí.",
	Confirmed:                  "Confirmado.",
	Submitted:                  "Enviado.",
	RunsAfterOthers:            "Se ejecutará cuando hayas respondido las demás preguntas de aquí.",
	Running:                    "Se está consultando a la aplicación.",
	RunsWhenAssistantContinues: "Se ejecutará una vez, cuando tu asistente continúe.",
	Done:                       "Hecho.",
	DoneUnread:                 "Hecho, pero la respuesta de la aplicación no se pudo leer completa.",
	Declined:                   "Rechazado.",
	ClosedUnanswered:           "Cerrado sin responder.",
	Expired:                    "Caducado.",
	NothingRan:                 "No se ejecutó nada.",
	MovedOn:                    "Cerrado.",
	MovedOnDetail:              "Seguiste con la conversación, así que no se ejecutó nada.",
	NotRun:                     "No se ejecutó.",
	Changed:                    "El registro cambió mientras esperaba tu respuesta.",
	UncheckedNotFound:          "No se pudo volver a comprobar el registro: no se encontró.",
	UncheckedForbidden:         "No se pudo volver a comprobar el registro: no tienes permiso para leerlo.",
	UncheckedDown:              "No se pudo volver a comprobar el registro: la aplicación no está disponible.",
	UncheckedUnreadable:        "No se pudo volver a comprobar el registro: no se pudo leer.",
	AppRefused:                 "La aplicación lo rechazó (HTTP %d).",
	AppRefusedValues:           "La aplicación rechazó los valores.",
	AppUnreachable:             "No se pudo contactar con la aplicación.",
	GateCouldNotRun:            "La pasarela no pudo ejecutarlo.",
	PolicyChanged:              "Las reglas de la pasarela para esta acción cambiaron después de que se le preguntara.",
	MayHaveRun:                 "Puede que se haya ejecutado o puede que no.",
	NoAnswer:                   "La aplicación no respondió. No se volvió a intentar.",
	AppFailed:                  "La aplicación falló (HTTP %d). No se volvió a intentar.",
	GateStopped:                "La pasarela se detuvo antes de que la aplicación respondiera. No se volvió a intentar.",
	CannotTell:                 "La pasarela no puede saber qué pasó. No se volvió a intentar.",
	NotAccepted:                "No aceptada",
	NotFound:                   "No encontrada",
	SignInTitle:                "Iniciar sesión",
	NoSuchPage:                 "Esta página no existe.",
	SignIn:                     "Inicia sesión para responder.",
	MethodNotAllowed:           "Esta página solo acepta GET y POST.",
	NoSuchConfirmation:         "Esta confirmación no existe o no es tuya.",
	CannotReadNow:              "La pasarela no puede leer esta confirmación ahora. Vuelve a intentarlo en un momento.",
	CrossSite:                  "Esta respuesta vino de otro sitio y no se aceptó. No se ejecutó nada.",
	Unreadable:                 "No se pudo leer la respuesta. No se ejecutó nada.",
	BadToken:                   "Esta respuesta no se aceptó. No se ejecutó nada.",
	AnswerRefused:              "Esta respuesta no se aceptó: la pregunta ya tenía respuesta, caducó o no es tuya. No se ejecutó nada.",
	CannotTakeAnswers:          "La pasarela no puede aceptar respuestas ahora. No se ejecutó nada.",
	ShowQuestion:               "Ver la pregunta",
	RuleRequired:               "Rellena este campo.",
	RuleMinChars:               "Usa al menos %d caracteres.",
	RuleMaxChars:               "Usa como máximo %d caracteres.",
	RuleMinItems:               "Elige al menos %d.",
	RuleMaxItems:               "Elige como máximo %d.",
	RuleChoice:                 "Elige una de las opciones.",
	RuleUnique:                 "Elige cada opción solo una vez.",
	RuleInteger:                "Escribe un número entero.",
	RuleNumber:                 "Escribe un número.",
	RuleMin:                    "Escribe %s o más.",
	RuleMax:                    "Escribe %s o menos.",
	RuleGreater:                "Escribe más de %s.",
	RuleLess:                   "Escribe menos de %s.",
	RuleEmail:                  "Escribe una dirección de correo válida.",
	RuleURL:                    "Escribe una dirección web válida.",
	RuleDate:                   "Escribe una fecha válida, por ejemplo 2026-12-01.",
	RuleDateTime:               "Escribe una fecha y hora válidas, por ejemplo 2026-12-01T09:00:00Z.",
}

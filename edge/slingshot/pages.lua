-- The pages the edge answers a visitor with instead of a redirect: no such
-- link (404), a link expired or used up (410), a link whose destination is
-- on a blocklist (451), a link's password page and
-- the page after the right password (unlock.lua), each in the visitor's
-- language, and the bare 503 of an edge that cannot ask Redis. Pure:
-- edge.lua and unlock.lua pick the language from Accept-Language
-- (pages.language); edge.lua keeps each 404 and 410 page it has made on its
-- domain's table (pages.for_domain), so that a flood of unknown slugs costs
-- a table lookup per request, not a page, and the password page's words are
-- joined once per language (pages.password_page).
local memo = require("slingshot.memo")
local html = require("slingshot.html")

local gmatch = string.gmatch
local lower = string.lower
local match = string.match
local format = string.format
local gsub = string.gsub
local ceil = math.ceil
local pairs = pairs
local tonumber = tonumber
local tostring = tostring
local escape = html.escape
local percent = html.percent
local head = html.head
local FOOT = html.FOOT

local _M = { _VERSION = "0.2.0" }

-- Per language: each page's title and text, the words of its links, and
-- the password page's words (`locked`: a lockout by its scope; `wait`:
-- wait_words' words, "in" then second and minute, singular then plural).
local TEXTS = {
    en = {
        not_found = { "Link not found",
            "There is no short link at this address. Check it for a typo, "
            .. "or ask whoever shared it." },
        expired = { "Link expired",
            "This short link has expired and no longer leads anywhere." },
        limit = { "Link used up",
            "This short link has had all the visits it was made for." },
        listed = { "Link blocked",
            "This short link led to an address on a list of unsafe sites, and has been stopped." },
        warned = { "Warning: unsafe link",
            "This short link leads to an address on a list of unsafe sites. It may try to "
            .. "steal passwords or harm your device.", "Go on to the site anyway" },
        blocked = { "Link disabled",
            "This short link has been disabled by the operator of this service." },
        report = "Report a link",
        continue = "Continue", home = "Home page",
        password = {
            title = "Password needed", heading = "This link needs a password",
            label = "Password", opening = "Opening the link",
            wrong = "That is not the password.",
            empty = "Type the password.",
            ["cross-site"] = "The password can only be sent from this page.",
            unavailable = "Passwords cannot be checked just now. Try again in a minute.",
            locked = {
                address = "Too many wrong passwords from your address.",
                link = "Too many wrong passwords for this link.",
                everyone = "Too many passwords are being checked right now.",
            },
            try_again = "Try again %s.",
            wait = { "in", "second", "seconds", "minute", "minutes" },
        },
    },
    de = {
        not_found = { "Link nicht gefunden",
            "Unter dieser Adresse gibt es keinen Kurzlink. Prüfen Sie sie auf Tippfehler, "
            .. "oder fragen Sie, wer ihn geteilt hat." },
        expired = { "Link abgelaufen",
            "Dieser Kurzlink ist abgelaufen und führt nirgendwo mehr hin." },
        limit = { "Link aufgebraucht",
            "Dieser Kurzlink hatte alle Besuche, für die er gemacht war." },
        listed = { "Link gesperrt",
            "Dieser Kurzlink führte zu einer Adresse auf einer Liste unsicherer Seiten "
            .. "und wurde gestoppt." },
        warned = { "Warnung: unsicherer Link",
            "Dieser Kurzlink führt zu einer Adresse auf einer Liste unsicherer Seiten. "
            .. "Sie könnte versuchen, Passwörter zu stehlen oder Ihrem Gerät zu schaden.",
            "Trotzdem zur Seite" },
        blocked = { "Link deaktiviert",
            "Dieser Kurzlink wurde vom Betreiber dieses Dienstes deaktiviert." },
        report = "Einen Link melden",
        continue = "Weiter", home = "Startseite",
        password = {
            title = "Passwort nötig", heading = "Für diesen Link ist ein Passwort nötig",
            label = "Passwort", opening = "Der Link wird geöffnet",
            wrong = "Das ist nicht das Passwort.",
            empty = "Geben Sie das Passwort ein.",
            ["cross-site"] = "Das Passwort kann nur von dieser Seite aus gesendet werden.",
            unavailable = "Passwörter können gerade nicht geprüft werden. "
                .. "Versuchen Sie es in einer Minute erneut.",
            locked = {
                address = "Zu viele falsche Passwörter von Ihrer Adresse.",
                link = "Zu viele falsche Passwörter für diesen Link.",
                everyone = "Gerade werden zu viele Passwörter geprüft.",
            },
            try_again = "Versuchen Sie es %s erneut.",
            wait = { "in", "Sekunde", "Sekunden", "Minute", "Minuten" },
        },
    },
    es = {
        not_found = { "Enlace no encontrado",
            "No hay ningún enlace corto en esta dirección. Compruebe que no tenga errores, "
            .. "o pregunte a quien lo compartió." },
        expired = { "Enlace caducado",
            "Este enlace corto ha caducado y ya no lleva a ninguna parte." },
        limit = { "Enlace agotado",
            "Este enlace corto ya recibió todas las visitas para las que se creó." },
        listed = { "Enlace bloqueado",
            "Este enlace corto llevaba a una dirección de una lista de sitios peligrosos "
            .. "y se ha detenido." },
        warned = { "Aviso: enlace peligroso",
            "Este enlace corto lleva a una dirección de una lista de sitios peligrosos. "
            .. "Puede intentar robar contraseñas o dañar su dispositivo.",
            "Ir al sitio de todos modos" },
        blocked = { "Enlace desactivado",
            "El operador de este servicio ha desactivado este enlace corto." },
        report = "Denunciar un enlace",
        continue = "Continuar", home = "Página de inicio",
        password = {
            title = "Contraseña necesaria", heading = "Este enlace necesita una contraseña",
            label = "Contraseña", opening = "Abriendo el enlace",
            wrong = "Esa no es la contraseña.",
            empty = "Escriba la contraseña.",
            ["cross-site"] = "La contraseña solo puede enviarse desde esta página.",
            unavailable = "Ahora no se pueden comprobar las contraseñas. "
                .. "Inténtelo de nuevo en un minuto.",
            locked = {
                address = "Demasiadas contraseñas incorrectas desde su dirección.",
                link = "Demasiadas contraseñas incorrectas para este enlace.",
                everyone = "Se están comprobando demasiadas contraseñas en este momento.",
            },
            try_again = "Inténtelo de nuevo %s.",
            wait = { "en", "segundo", "segundos", "minuto", "minutos" },
        },
    },
    fr = {
        not_found = { "Lien introuvable",
            "Il n’y a pas de lien court à cette adresse. Vérifiez qu’elle ne contient pas "
            .. "de faute de frappe, ou demandez à la personne qui l’a partagé." },
        expired = { "Lien expiré",
            "Ce lien court a expiré et ne mène plus nulle part." },
        limit = { "Lien épuisé",
            "Ce lien court a reçu toutes les visites prévues." },
        listed = { "Lien bloqué",
            "Ce lien court menait à une adresse d’une liste de sites dangereux, et a été arrêté." },
        warned = { "Attention : lien dangereux",
            "Ce lien court mène à une adresse d’une liste de sites dangereux. Elle peut "
            .. "tenter de voler des mots de passe ou de nuire à votre appareil.",
            "Aller quand même sur le site" },
        blocked = { "Lien désactivé",
            "Ce lien court a été désactivé par l’opérateur de ce service." },
        report = "Signaler un lien",
        continue = "Continuer", home = "Page d’accueil",
        password = {
            title = "Mot de passe requis", heading = "Ce lien demande un mot de passe",
            label = "Mot de passe", opening = "Ouverture du lien",
            wrong = "Ce n’est pas le mot de passe.",
            empty = "Saisissez le mot de passe.",
            ["cross-site"] = "Le mot de passe ne peut être envoyé que depuis cette page.",
            unavailable = "Les mots de passe ne peuvent pas être vérifiés pour l’instant. "
                .. "Réessayez dans une minute.",
            locked = {
                address = "Trop de mauvais mots de passe depuis votre adresse.",
                link = "Trop de mauvais mots de passe pour ce lien.",
                everyone = "Trop de mots de passe sont vérifiés en ce moment.",
            },
            try_again = "Réessayez %s.",
            wait = { "dans", "seconde", "secondes", "minute", "minutes" },
        },
    },
}
_M.LANGUAGES = { "de", "en", "es", "fr" }
_M.KINDS = { "not_found", "expired", "limit", "listed" }

-- Accept-Language longer than this is read no further: a visitor's browser
-- sends a few dozen bytes.
local READ_MAX = 256

-- The language of TEXTS the visitor prefers most (its q-value highest, the
-- first listed among equals), by the primary tag alone (de-AT is de); "en"
-- when none is offered.
local function language(accept)
    if not accept or accept == "" then
        return "en"
    end
    local best, best_q = "en", 0
    for entry in gmatch(accept:sub(1, READ_MAX), "[^,]+") do
        local tag = match(entry, "^%s*(%a%a)[%-_;%s]") or match(entry, "^%s*(%a%a)%s*$")
        tag = tag and lower(tag)
        if TEXTS[tag] then
            local q = 1
            local given = match(entry, ";%s*q=([%d.]+)")
            if given then
                q = tonumber(given) or 0
            end
            if q > best_q then
                best, best_q = tag, q
            end
        end
    end
    return best
end
_M.language = memo.of(language)

-- The link to the domain's report page (nginx.conf's /report), with the
-- short URL to report when there is one.
local function report_link(texts, short_url)
    local href = short_url and "/report?url=" .. escape(gsub(short_url, "[^%w%-._~:/]", percent))
        or "/report"
    return "<p><a href=\"" .. href .. "\">" .. texts.report .. "</a></p>"
end

-- A page of `kind` in `lang` for a domain (root_url, not_found_url): a link
-- to the domain's home page when it has one, and, on a 410, on to its
-- not-found redirect when it has one (a 404 with one is a redirect, no
-- page); a link to the report page when `report` (the edge passes
-- reports on to the dashboard).
function _M.render(kind, lang, domain, report)
    local texts = TEXTS[lang] or TEXTS.en
    local title, text = texts[kind][1], texts[kind][2]
    local links = report and report_link(texts) or ""
    if kind ~= "not_found" and domain.not_found_url then
        links = links .. "<p><a href=\"" .. escape(domain.not_found_url) .. "\">"
            .. texts.continue .. "</a></p>"
    end
    if domain.root_url then
        links = links .. "<p><a href=\"" .. escape(domain.root_url) .. "\">"
            .. texts.home .. "</a></p>"
    end
    return head(lang, title) .. "<h1>" .. title .. "</h1>"
        .. "<p>" .. text .. "</p>" .. links .. FOOT
end

-- The warning before a link whose destination is on a blocklist, in
-- `lang`: the destination shown, a way on to it, and the report page
-- (when `report`) with the link's short URL filled in.
function _M.warning_page(lang, url, short_url, report)
    local texts = TEXTS[lang] or TEXTS.en
    local words = texts.warned
    local escaped = escape(url)
    return head(lang, words[1]) .. "<h1>" .. words[1] .. "</h1><p>" .. words[2] .. "</p>"
        .. "<p class=\"error\">" .. escaped .. "</p>"
        .. "<p><a href=\"" .. escaped .. "\" rel=\"noreferrer nofollow\">" .. words[3]
        .. "</a></p>"
        .. (report and report_link(texts, short_url) or "") .. FOOT
end

-- The 451 of a link the service's staff stopped, in `lang`: the
-- operator's words (plain text) or, when they gave none, the page's own.
function _M.blocked_page(lang, words, report)
    local texts = TEXTS[lang] or TEXTS.en
    local text = words ~= "" and escape(words) or texts.blocked[2]
    local title = texts.blocked[1]
    return head(lang, title) .. "<h1>" .. title .. "</h1><p>" .. text .. "</p>"
        .. (report and report_link(texts) or "") .. FOOT
end

-- The page and its length (for Content-Length, which spares nginx the
-- chunked encoding), made once per domain table, kind and language: a
-- domain's table is made again when the domains change, and its pages with it.
function _M.for_domain(domain, kind, lang, report)
    local made = domain.pages
    if not made then
        made = {}
        domain.pages = made
    end
    local key = kind .. lang
    local page = made[key]
    if not page then
        page = _M.render(kind, lang, domain, report)
        made[key] = page
        made[key .. "#"] = tostring(#page)
    end
    return page, made[key .. "#"]
end

-- The longest password the page's field takes; unlock.lua holds a longer
-- one wrong without asking: the dashboard keeps none longer.
_M.PASSWORD_MAX = 128

-- The password page's own parts in each language, joined once; the form's
-- action, the Referer it keeps and what it says go between them.
local FORM = "<form method=\"post\" action=\""
local REF = "\"><input type=\"hidden\" name=\"ref\" value=\""
local ALERT = "<p class=\"error\" id=\"error\" role=\"alert\">"
local ASKING = {}
for lang, texts in pairs(TEXTS) do
    local words = texts.password
    ASKING[lang] = {
        top = head(lang, words.title) .. "<h1>" .. words.heading .. "</h1>",
        field = "\"><label for=\"password\">" .. words.label .. "</label>"
            .. "<input id=\"password\" name=\"password\" type=\"password\" required autofocus"
            .. " autocomplete=\"current-password\" maxlength=\"" .. _M.PASSWORD_MAX .. "\"",
        tail = "><button type=\"submit\">" .. texts.continue .. "</button></form>" .. FOOT,
    }
end

-- The password page in `lang`: the form posting to `action`, with
-- `referer` kept, and `message` (plain text; nil: none) above it.
function _M.password_page(lang, action, referer, message)
    local parts = ASKING[lang] or ASKING.en
    if not message then
        return parts.top .. FORM .. escape(action) .. REF .. escape(referer)
            .. parts.field .. parts.tail
    end
    return parts.top .. ALERT .. escape(message) .. "</p>"
        .. FORM .. escape(action) .. REF .. escape(referer)
        .. parts.field .. " aria-describedby=\"error\"" .. parts.tail
end

-- After the right password, in `lang`: on to `url` (unlock.self_url's),
-- with no script.
function _M.onward_page(lang, url)
    local texts = TEXTS[lang] or TEXTS.en
    local opening = texts.password.opening
    local escaped = escape(url)
    return head(lang, opening, "<meta http-equiv=\"refresh\" content=\"0; url=" .. escaped .. "\">")
        .. "<h1>" .. opening .. "</h1><p><a href=\"" .. escaped .. "\">" .. texts.continue
        .. "</a></p>" .. FOOT
end

-- How long to wait, in `lang`: "in 40 seconds", "in 1 minute", "in 15 minutes".
function _M.wait_words(lang, seconds)
    local wait = (TEXTS[lang] or TEXTS.en).password.wait
    if seconds < 60 then
        return format("%s %d %s", wait[1], seconds, seconds == 1 and wait[2] or wait[3])
    end
    local minutes = ceil(seconds / 60)
    return format("%s %d %s", wait[1], minutes, minutes == 1 and wait[4] or wait[5])
end

-- The outcomes whose words are the same whatever else the answer holds.
local SAID = { wrong = true, empty = true, ["cross-site"] = true }

-- What the password page says, in `lang`, for a check's answer
-- (unlock.answer's, or `empty` or `cross-site`); any other: that passwords
-- cannot be checked.
function _M.message(lang, answer)
    local words = (TEXTS[lang] or TEXTS.en).password
    local outcome = answer.outcome
    if outcome == "locked" then
        return words.locked[answer.scope] .. " "
            .. format(words.try_again, _M.wait_words(lang, answer.retry_after))
    elseif SAID[outcome] then
        return words[outcome]
    end
    return words.unavailable
end

-- The 503 of an edge that could ask Redis nothing (edge.lua): bare, in English.
_M.UNAVAILABLE = "<!doctype html><title>Unavailable</title>"
    .. "<h1>Temporarily unavailable</h1><p>Please try again shortly.</p>"

return _M

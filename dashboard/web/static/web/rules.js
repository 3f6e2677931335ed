// The link form's builders of redirect rules and of the A/B split: rows that
// write the same JSON as the boxes under "The same as JSON", which the form
// sends and the API takes (links/rules.py checks it). Without this script
// the boxes are the way; with it they stay for pasting and reading.
"use strict";

(() => {
  const OPTIONS = JSON.parse(document.getElementById("rules-options")?.textContent || "null");
  if (!OPTIONS) return;

  const TYPE_NAMES = {
    device: "Device is", language: "Language is", country: "Country is", query: "Query has",
    ip: "Address is in", browser: "Browser is", before: "Before", after: "After",
  };
  const HINTS = { language: "en or en-GB", country: "DE", query: "value (empty: any)", ip: "192.0.2.0/24 or 10.*.*.*" };
  const BROWSER_NAMES = { android_browser: "Android's own browser" };
  // What a type's value starts as when the type is picked: the first of a list, else nothing yet.
  const FIRST = { device: () => OPTIONS.devices[0], browser: () => OPTIONS.browsers[0] };

  // A moment as the link keeps it (UTC, 2030-01-31T23:59:59Z) in a
  // datetime-local input, which shows and takes the person's own time.
  const pad = (n) => String(n).padStart(2, "0");
  function localMoment(value) {
    const date = value ? new Date(value) : null;
    if (!date || Number.isNaN(date.getTime())) return "";
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`
      + `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  }
  function utcMoment(local) {
    const date = local ? new Date(local) : null;
    return date && !Number.isNaN(date.getTime()) ? date.toISOString().replace(/\.\d{3}Z$/, "Z") : "";
  }

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (value === true) node.setAttribute(name, "");
      else if (value !== false && value !== null && value !== undefined) node.setAttribute(name, value);
    }
    node.append(...children);
    return node;
  }

  const button = (text, label, onclick, extra = {}) =>
    el("button", { type: "button", class: "outline secondary row-button", "aria-label": label, text, onclick, ...extra });

  // A list of rows kept in step with its JSON box: typing changes the value
  // in place; adding, removing and moving draw the rows again.
  class Builder {
    constructor(root) {
      this.root = root;
      this.kind = root.dataset.kind;
      this.box = document.getElementById(root.dataset.json);
      this.list = el("ol", { class: "builder-rows" });
      this.add = el("button", { type: "button", class: "secondary", onclick: () => this.append() });
      this.notes = el("div", { class: "builder-notes" });
      root.append(this.notes, this.list, this.add);
      this.errors = [...document.querySelectorAll(`#${root.dataset.json}_error .field-error`)].map((e) => e.textContent);
      this.box.addEventListener("input", () => this.load());
      this.load();
    }

    load() {
      try {
        const value = this.box.value.trim() ? JSON.parse(this.box.value) : [];
        if (!Array.isArray(value)) throw new Error("not a list");
        this.items = value;
      } catch {
        // JSON being typed, or sent back as typed: the box is the way until it parses.
        this.root.hidden = true;
        this.box.closest("details").open = true;
        return false;
      }
      this.root.hidden = false;
      this.draw();
      return true;
    }

    write() {
      this.box.value = this.items.length ? JSON.stringify(this.items) : "";
    }

    // `focus`: selectors of where the focus goes next, the first enabled one found.
    change(mutate, ...focus) {
      mutate();
      this.write();
      this.draw();
      for (const selector of focus) {
        const target = this.root.querySelector(`${selector}:not([disabled])`);
        if (target) return target.focus();
      }
    }

    append() {
      const fresh = this.kind === "rules"
        ? [{ url: "", conditions: [{ type: "device", value: OPTIONS.devices[0] }] }]
        : (this.items.length ? [{ url: "", weight: 50 }] : [{ url: "", weight: 50 }, { url: "", weight: 50 }]);
      const at = this.items.length;
      this.change(() => this.items.push(...fresh), `[data-row="${at}"] input, [data-row="${at}"] select`);
    }

    moves(index, noun) {
      const last = this.items.length - 1;
      const move = (by) => () => this.change(
        () => this.items.splice(index + by, 0, ...this.items.splice(index, 1)),
        `[data-row="${index + by}"] [data-move="${by}"]`,
        `[data-row="${index + by}"] [data-move="${-by}"]`,
      );
      return el("span", { class: "row-moves" },
        button("↑", `Move ${noun} up`, move(-1), { disabled: index === 0, "data-move": "-1" }),
        button("↓", `Move ${noun} down`, move(1), { disabled: index === last, "data-move": "1" }),
        button("Remove", `Remove ${noun}`, () => this.change(() => this.items.splice(index, 1), ".builder-add")),
      );
    }

    draw() {
      this.list.replaceChildren(...this.items.map((item, index) => this.row(item, index)));
      const most = this.kind === "rules" ? OPTIONS.max_rules : OPTIONS.max_split;
      this.add.textContent = this.kind === "rules" ? "Add a rule" : (this.items.length ? "Add a target" : "Split the visitors");
      this.add.className = "secondary builder-add";
      this.add.disabled = this.items.length >= most;
      this.notes.replaceChildren(...this.messagesFor(null, null, null).map((text) => el("small", { class: "error", text })));
      this.drawShares();
    }

    // The server's messages start with the path of what is wrong, such as
    // rules[1].conditions[0].value: each is shown at its row and input. Each
    // of row, condition and part: what to match, null for none, undefined for any.
    messagesFor(row, condition, part) {
      const fits = (want, got) => want === undefined || (want === null ? got === undefined : String(want) === got);
      const found = [];
      for (const message of this.errors) {
        const match = /^(?:rules|split)(?:\[(\d+)\](?:\.conditions(?:\[(\d+)\])?)?\.?(\w+)?)?: /.exec(message);
        const [, r, c, p] = match || [];
        if (fits(row, r) && fits(condition, c) && fits(part, p)) found.push(match ? message.slice(match[0].length) : message);
      }
      return found;
    }

    input(attrs, value, onvalue, errors) {
      return el("input", {
        ...attrs, value: value ?? "", "aria-invalid": errors.length ? "true" : null,
        oninput: (event) => { onvalue(event.target.value); this.write(); this.drawShares(); },
      });
    }

    row(item, index) {
      return this.kind === "rules" ? this.ruleRow(item, index) : this.splitRow(item, index);
    }

    ruleRow(rule, index) {
      const name = `rule ${index + 1}`;
      const conditions = Array.isArray(rule.conditions) ? rule.conditions : (rule.conditions = []);
      const rows = conditions.map((condition, at) => this.conditionRow(rule, condition, index, at));
      const url = this.messagesFor(index, null, "url");
      return el("li", { class: "builder-row rule", "data-row": index },
        el("div", { class: "row-head" }, el("strong", { text: `Rule ${index + 1}` }), this.moves(index, name)),
        el("ul", { class: "conditions" }, ...rows),
        button("Add a condition", `Add a condition to ${name}`, () => this.change(
          () => conditions.push({ type: "country", value: "" }),
          `[data-row="${index}"] [data-condition="${conditions.length}"] select`,
        ), { disabled: conditions.length >= OPTIONS.max_conditions, class: "link-button" }),
        el("label", {}, `Then send the visitor to`,
          this.input({ type: "url", placeholder: "https://", spellcheck: "false" }, rule.url, (v) => { rule.url = v; }, url)),
        ...[...url, ...this.messagesFor(index, null, null)].map((text) => el("small", { class: "error", text })),
      );
    }

    conditionRow(rule, condition, index, at) {
      const label = `Rule ${index + 1}, condition ${at + 1}`;
      const errors = (part) => this.messagesFor(index, at, part);
      const type = el("select", {
        "aria-label": `${label}: what is compared`,
        onchange: (event) => this.change(() => {
          const kind = event.target.value;
          rule.conditions[at] = kind === "query" ? { type: "query", key: "" } : { type: kind, value: FIRST[kind]?.() ?? "" };
        }, `[data-row="${index}"] [data-condition="${at}"] select`),
      }, ...OPTIONS.types.map((kind) => el("option", { value: kind, selected: kind === condition.type, text: TYPE_NAMES[kind] || kind })));
      const parts = [el("span", { class: "and", text: at ? "and" : "If" }), type];
      if (condition.type === "query") {
        parts.push(this.input({ "aria-label": `${label}: parameter`, placeholder: "parameter", spellcheck: "false" },
          condition.key, (v) => { condition.key = v; }, errors("key")));
        parts.push(el("span", { text: "=" }));
        parts.push(this.input({ "aria-label": `${label}: value`, placeholder: HINTS.query, spellcheck: "false" },
          condition.value, (v) => { if (v) condition.value = v; else delete condition.value; }, errors("value")));
      } else if (condition.type === "device" || condition.type === "browser") {
        const names = condition.type === "device" ? OPTIONS.devices : OPTIONS.browsers;
        parts.push(el("select", {
          "aria-label": `${label}: ${condition.type}`, "aria-invalid": errors("value").length ? "true" : null,
          onchange: (event) => { condition.value = event.target.value; this.write(); },
        }, ...names.map((name) => el("option", {
          value: name, selected: name === condition.value, text: BROWSER_NAMES[name] || name,
        }))));
      } else if (condition.type === "before" || condition.type === "after") {
        parts.push(this.input({
          type: "datetime-local", step: 1, "aria-label": `${label}: ${condition.type}, in your time zone`,
        }, localMoment(condition.value), (v) => { condition.value = utcMoment(v); }, errors("value")));
      } else {
        parts.push(this.input({ "aria-label": `${label}: ${condition.type}`, placeholder: HINTS[condition.type] || "", spellcheck: "false" },
          condition.value, (v) => { condition.value = v; }, errors("value")));
      }
      if (rule.conditions.length > 1) {
        parts.push(button("×", `Remove ${label.toLowerCase()}`, () => this.change(
          () => rule.conditions.splice(at, 1), `[data-row="${index}"] .conditions select`,
        )));
      }
      const messages = errors(undefined).map((text) => el("small", { class: "error", text }));
      return el("li", { class: "condition", "data-condition": at }, el("div", { class: "condition-parts" }, ...parts), ...messages);
    }

    splitRow(target, index) {
      const name = `target ${index + 1}`;
      const weight = (value) => {
        const number = Number(value);
        target.weight = value !== "" && Number.isInteger(number) ? number : value;
      };
      const errors = (part) => this.messagesFor(index, null, part);
      return el("li", { class: "builder-row destination", "data-row": index },
        el("div", { class: "row-head" }, el("strong", { text: `Target ${index + 1}` }), el("span", { class: "share" }), this.moves(index, name)),
        el("div", { class: "split-parts" },
          el("label", { class: "split-url" }, "URL",
            this.input({ type: "url", placeholder: "https://", spellcheck: "false" }, target.url, (v) => { target.url = v; }, errors("url"))),
          el("label", { class: "split-weight" }, "Weight",
            this.input({ type: "number", min: 1, max: OPTIONS.max_weight, step: 1, inputmode: "numeric" }, target.weight, weight, errors("weight")))),
        ...[...errors("url"), ...errors("weight"), ...errors(null)].map((text) => el("small", { class: "error", text })),
      );
    }

    // Each target's share of the visitors, as its weight makes it.
    drawShares() {
      if (this.kind !== "split") return;
      const weights = this.items.map((item) => (Number.isInteger(item.weight) && item.weight > 0 ? item.weight : 0));
      const total = weights.reduce((a, b) => a + b, 0);
      this.list.querySelectorAll(".share").forEach((share, index) => {
        share.textContent = total ? `${Math.round((100 * weights[index]) / total)}% of visitors` : "";
      });
    }
  }

  const builders = [...document.querySelectorAll("fieldset.builder[data-json]")].map((root) => new Builder(root));
  // The rows say all the JSON says: it stays folded unless it could not be read.
  if (builders.every((builder) => !builder.root.hidden)) document.getElementById("rules-json").open = false;
})();

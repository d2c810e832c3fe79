import Crypto
import Foundation

/// The web console served at `/console`: one static page (HTML, CSS and script, no build step)
/// over the gateway's own authenticated API, modelled on the Notification Hubs tutorial app. It
/// signs in with Basic credentials (kept in the tab's session storage), lists the user's
/// registrations, registers sandbox devices the way the tutorial client does, sends with platform
/// switches, shows progress and the per-platform and per-device results, and, with a sandbox,
/// what each device received. Every value from the server is inserted as text, never as markup.
enum ConsolePage {
    /// The page's `Content-Security-Policy`: its own origin only, and only its own script (by
    /// hash), so that injected markup could not run code.
    static let contentSecurityPolicy: String = {
        let start = html.range(of: "<script>")!.upperBound
        let end = html.range(of: "</script>")!.lowerBound
        let digest = SHA256.hash(data: Data(html[start..<end].utf8))
        return "default-src 'self'; script-src 'sha256-\(Data(digest).base64EncodedString())'; style-src 'unsafe-inline'; "
            + "img-src data:; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
    }()

    static let html = #"""
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Pushgate console</title>
        <style>
        :root { --ink: #1d2330; --muted: #5c6475; --line: #d9dde5; --accent: #2f5bd3; --ok: #1f7a3f; --bad: #b3261e; --bg: #f5f6f9; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
        header { display: flex; align-items: center; gap: 1rem; padding: .8rem 1.5rem; background: var(--ink); color: #fff; }
        header h1 { font-size: 1.1rem; margin: 0; font-weight: 600; }
        header .who { margin-left: auto; font-size: .9rem; }
        main { max-width: 1100px; margin: 1.5rem auto; padding: 0 1rem; display: grid; gap: 1.2rem; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.2rem; }
        h2 { font-size: 1rem; margin: 0 0 .8rem; }
        label { display: block; font-size: .85rem; color: var(--muted); margin-bottom: .2rem; }
        input[type=text], input[type=password], select, textarea { width: 100%; padding: .45rem .55rem; border: 1px solid var(--line);
            border-radius: 5px; font: inherit; }
        textarea { min-height: 4.5rem; resize: vertical; }
        button { font: inherit; padding: .45rem .9rem; border-radius: 5px; border: 1px solid var(--accent); background: var(--accent);
            color: #fff; cursor: pointer; }
        button.quiet { background: #fff; color: var(--accent); }
        button:disabled { opacity: .5; cursor: default; }
        .row { display: flex; gap: .8rem; align-items: end; flex-wrap: wrap; }
        .row > div { flex: 1; min-width: 10rem; }
        table { width: 100%; border-collapse: collapse; font-size: .9rem; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { color: var(--muted); font-weight: 600; }
        code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .85rem; }
        .switches { display: flex; gap: 1.2rem; margin: .2rem 0 .8rem; }
        .switch { display: flex; align-items: center; gap: .45rem; cursor: pointer; color: var(--ink); font-size: .95rem; margin: 0; }
        .switch input { appearance: none; width: 2.3rem; height: 1.3rem; border-radius: 1rem; background: #c5cad4; position: relative;
            cursor: pointer; transition: background .15s; margin: 0; }
        .switch input::after { content: ""; position: absolute; top: .15rem; left: .15rem; width: 1rem; height: 1rem; border-radius: 50%;
            background: #fff; transition: left .15s; }
        .switch input:checked { background: var(--accent); }
        .switch input:checked::after { left: 1.15rem; }
        .ok { color: var(--ok); font-weight: 600; }
        .bad { color: var(--bad); font-weight: 600; }
        .muted { color: var(--muted); }
        .status { min-height: 1.3rem; margin-top: .6rem; font-size: .9rem; }
        .inbox { margin: .3rem 0 .6rem; padding: .5rem .7rem; background: var(--bg); border-radius: 5px; white-space: pre-wrap;
            word-break: break-all; }
        #login { max-width: 420px; margin: 4rem auto; }
        [hidden] { display: none !important; }
        </style>
        </head>
        <body>
        <header>
          <h1>Pushgate console</h1>
          <span class="who" id="who" hidden></span>
          <button class="quiet" id="signout" hidden>Sign out</button>
        </header>

        <section id="login">
          <h2>Sign in</h2>
          <form id="login-form">
            <label for="login-user">User name</label>
            <input type="text" id="login-user" autocomplete="username" required>
            <label for="login-password" style="margin-top:.6rem">Password</label>
            <input type="password" id="login-password" autocomplete="current-password" required>
            <div style="margin-top:.9rem"><button type="submit" id="login-button">Sign in</button></div>
            <div class="status bad" id="login-status" role="alert"></div>
          </form>
        </section>

        <main id="app" hidden>
          <section>
            <h2>Send a notification</h2>
            <div class="switches" id="platform-switches">
              <label class="switch"><input type="checkbox" id="pns-wns" value="wns" checked> WNS</label>
              <label class="switch"><input type="checkbox" id="pns-gcm" value="fcm,gcm" checked> GCM/FCM</label>
              <label class="switch"><input type="checkbox" id="pns-apns" value="apns" checked> APNs</label>
            </div>
            <form id="send-form">
              <div class="row">
                <div style="flex:0 0 14rem"><label for="send-to">Recipient user name</label><input type="text" id="send-to" required></div>
                <div><label for="send-message">Message</label><input type="text" id="send-message" required></div>
              </div>
              <div class="row" style="margin-top:.7rem">
                <label class="switch"><input type="checkbox" id="send-secure"> Secure push (only an id travels)</label>
                <div style="flex:0 0 auto"><button type="submit" id="send-button">Send</button></div>
              </div>
            </form>
            <div class="status" id="send-status" role="status"></div>
          </section>

          <section id="results" hidden>
            <h2>Results <span class="muted mono" id="result-id"></span></h2>
            <table id="platform-results"><thead><tr><th>Platform</th><th>Targets</th><th>Delivered</th><th>Outcomes</th></tr></thead>
              <tbody></tbody></table>
            <h2 style="margin-top:1rem">Devices</h2>
            <table id="device-results"><thead><tr><th>Registration</th><th>Platform</th><th>Handle</th><th>Outcome</th><th>Status</th>
              <th>Reason / message id</th></tr></thead><tbody></tbody></table>
          </section>

          <section>
            <div class="row" style="align-items:center">
              <h2 style="margin:0">Your registrations</h2>
              <div style="flex:0 0 auto"><button class="quiet" id="refresh">Refresh</button></div>
            </div>
            <div class="row" id="sandbox-register" hidden style="margin-top:.8rem">
              <div style="flex:0 0 12rem"><label for="sandbox-platform">Sandbox device</label>
                <select id="sandbox-platform"><option value="apns">APNs</option><option value="fcm">FCM</option>
                <option value="gcm">GCM (legacy)</option><option value="wns">WNS</option></select></div>
              <div style="flex:0 0 auto"><button id="sandbox-register-button">Register a sandbox device</button></div>
            </div>
            <table id="registrations" style="margin-top:.8rem"><thead><tr><th>Registration</th><th>Platform</th><th>Handle</th><th>Tags</th>
              <th></th></tr></thead><tbody></tbody></table>
            <div class="status" id="registrations-status"></div>
          </section>
        </main>

        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        let credentials = sessionStorage.getItem("pushgate.credentials");
        let me = null;
        let sandboxDevices = new Map();

        function text(tag, value, className) {
          const element = document.createElement(tag);
          element.textContent = value == null ? "" : String(value);
          if (className) element.className = className;
          return element;
        }
        function row(cells) {
          const tr = document.createElement("tr");
          for (const cell of cells) tr.appendChild(cell instanceof Node ? cell : text("td", cell));
          return tr;
        }
        function mask(handle) { return handle.length <= 12 ? handle : handle.slice(0, 6) + "…" + handle.slice(-4); }

        async function api(method, path, body, accept) {
          // X-Requested-With: a refused login answers 401 without a Basic challenge, so the browser shows no password dialog.
          const headers = { "Authorization": "Basic " + credentials, "X-Requested-With": "XMLHttpRequest" };
          if (body !== undefined) headers["Content-Type"] = "application/json; charset=utf-8";
          if (accept) headers["Accept"] = accept;
          const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
          return response;
        }
        async function failure(response) {
          try { const body = await response.json(); return body.error || ("HTTP " + response.status); }
          catch { return "HTTP " + response.status; }
        }

        async function signIn(user, password) {
          credentials = btoa(String.fromCharCode(...new TextEncoder().encode(user + ":" + password)));
          const response = await api("GET", "/api/me");
          if (!response.ok) { credentials = null; throw new Error(await failure(response)); }
          me = await response.json();
          sessionStorage.setItem("pushgate.credentials", credentials);
          $("login").hidden = true;
          $("app").hidden = false;
          $("who").hidden = false;
          $("signout").hidden = false;
          $("who").textContent = "Signed in as " + me.user + (me.admin ? " (admin)" : "");
          $("sandbox-register").hidden = !me.sandbox;
          if (!$("send-to").value) $("send-to").value = me.user;
          for (const input of $("platform-switches").querySelectorAll("input")) {
            const platforms = input.value.split(",");
            if (!platforms.some((p) => me.platforms.includes(p))) { input.checked = false; input.disabled = true; }
          }
          await loadRegistrations();
        }

        async function loadRegistrations() {
          const body = $("registrations").tBodies[0];
          const response = await api("GET", "/api/registrations?limit=200");
          if (!response.ok) { $("registrations-status").textContent = await failure(response); return; }
          const registrations = await response.json();
          if (me.sandbox) {
            const devices = await api("GET", "/api/sandbox/devices");
            if (devices.ok) sandboxDevices = new Map((await devices.json()).map((d) => [d.handle, d]));
          }
          body.replaceChildren();
          for (const registration of registrations) {
            const actions = document.createElement("td");
            const device = sandboxDevices.get(registration.handle);
            const remove = text("button", "Delete", "quiet");
            remove.addEventListener("click", () => deleteRegistration(registration.id));
            actions.appendChild(remove);
            const tr = row([text("td", registration.id.slice(0, 8) + "…", "mono"), registration.platform,
              text("td", mask(registration.handle), "mono"), registration.tags.join(", "), actions]);
            tr.dataset.registration = registration.id;
            body.appendChild(tr);
            if (device) {
              const cell = document.createElement("td");
              cell.colSpan = 5;
              cell.appendChild(text("div", "Inbox of sandbox device " + device.id + ": loading…", "muted"));
              const inboxRow = document.createElement("tr");
              inboxRow.className = "inbox-row";
              inboxRow.dataset.device = device.id;
              inboxRow.dataset.platform = registration.platform;
              inboxRow.appendChild(cell);
              body.appendChild(inboxRow);
              loadInbox(device, cell);
            }
          }
          $("registrations-status").textContent = registrations.length === 0
            ? (me.sandbox ? "No registrations yet: register a sandbox device." : "No registrations yet.")
            : registrations.length + " registration" + (registrations.length === 1 ? "" : "s");
        }

        async function loadInbox(device, cell) {
          const response = await api("GET", "/api/sandbox/devices/" + encodeURIComponent(device.id) + "/inbox");
          cell.replaceChildren();
          if (!response.ok) { cell.appendChild(text("div", await failure(response), "bad")); return; }
          const inbox = await response.json();
          cell.appendChild(text("div", "Inbox of sandbox " + device.platform + " device " + device.id + " (" + device.status + "): "
            + inbox.length + " notification" + (inbox.length === 1 ? "" : "s"), "muted"));
          for (const received of inbox.slice(-3)) {
            const box = text("div", received.payload, "inbox mono");
            box.dataset.messageId = received.messageID;
            cell.appendChild(box);
          }
        }

        async function deleteRegistration(id) {
          const response = await api("DELETE", "/api/register/" + encodeURIComponent(id));
          $("registrations-status").textContent = response.ok ? "Deleted " + id : await failure(response);
          await loadRegistrations();
        }

        async function registerSandboxDevice() {
          const status = $("registrations-status");
          const button = $("sandbox-register-button");
          button.disabled = true;
          try {
            const created = await api("POST", "/api/sandbox/devices", { platform: $("sandbox-platform").value });
            if (!created.ok) throw new Error(await failure(created));
            const device = await created.json();
            // The tutorial client's sequence: ask for an id for this handle, then PUT the device.
            const idResponse = await api("POST", "/api/register?handle=" + encodeURIComponent(device.handle));
            if (!idResponse.ok) throw new Error(await failure(idResponse));
            const id = await idResponse.json();
            const put = await api("PUT", "/api/register/" + encodeURIComponent(id),
              { Platform: device.platform, Handle: device.handle, Tags: [] });
            if (!put.ok) throw new Error(await failure(put));
            await loadRegistrations();
            status.textContent = "Registered sandbox " + device.platform + " device " + device.id;
          } catch (error) {
            status.textContent = "Registration failed: " + error.message;
          } finally {
            button.disabled = false;
          }
        }

        async function send(event) {
          event.preventDefault();
          const platforms = [...$("platform-switches").querySelectorAll("input:checked")].flatMap((i) => i.value.split(","))
            .filter((p) => me.platforms.includes(p));
          const status = $("send-status");
          if (platforms.length === 0) { status.textContent = "Choose at least one platform."; return; }
          const query = "pns=" + encodeURIComponent(platforms.join(",")) + "&to_tag=" + encodeURIComponent($("send-to").value)
            + ($("send-secure").checked ? "&secure=true" : "");
          $("send-button").disabled = true;
          status.className = "status";
          status.textContent = "Sending…";
          try {
            const response = await api("POST", "/api/notifications?" + query, $("send-message").value, "application/x-ndjson");
            if (!response.ok) throw new Error(await failure(response));
            const reader = response.body.getReader();
            const decoder = new TextDecoder();
            let buffered = "";
            let last = null;
            for (;;) {
              const { value, done } = await reader.read();
              if (done) break;
              buffered += decoder.decode(value, { stream: true });
              let newline;
              while ((newline = buffered.indexOf("\n")) >= 0) {
                const line = JSON.parse(buffered.slice(0, newline));
                buffered = buffered.slice(newline + 1);
                if (line.progress) status.textContent = "Sending… " + line.progress.processed + " answered, "
                  + line.progress.succeeded + " delivered";
                else last = line;
              }
            }
            if (!last) throw new Error("the gateway closed the stream without a result");
            if (last.error) throw new Error(last.error + " (" + last.status + ")");
            showResult(last.result, last.status, last.secureId);
          } catch (error) {
            status.className = "status bad";
            status.textContent = "Send failed: " + error.message;
          } finally {
            $("send-button").disabled = false;
          }
          await loadRegistrations();
        }

        function showResult(result, httpStatus, secureId) {
          const status = $("send-status");
          const summary = result.state === "NoTargetFound" ? "No registration matched."
            : result.success + " delivered, " + result.failure + " failed";
          status.className = "status " + (result.failure === 0 && result.success > 0 ? "ok" : "bad");
          status.textContent = summary + (secureId ? " · secure id " + secureId : "");
          $("results").hidden = false;
          $("result-id").textContent = result.notificationId + " · " + result.state;
          const platforms = $("platform-results").tBodies[0];
          platforms.replaceChildren();
          for (const platform of result.platforms) {
            const outcomes = Object.entries(platform.outcomes).map(([name, count]) => name + " " + count).join(", ");
            const tr = row([platform.platform, platform.total, text("td", platform.outcomes.Success || 0,
              (platform.outcomes.Success || 0) === platform.total ? "ok" : "bad"), outcomes]);
            tr.dataset.platform = platform.platform;
            platforms.appendChild(tr);
          }
          const devices = $("device-results").tBodies[0];
          devices.replaceChildren();
          for (const target of result.targets) {
            const tr = row([text("td", target.registrationId.slice(0, 8) + "…", "mono"), target.platform, text("td", target.handle, "mono"),
              text("td", target.outcome, target.outcome === "Success" ? "ok" : "bad"), target.statusCode ?? "",
              text("td", target.reason || target.serviceMessageId || "", "mono")]);
            tr.dataset.platform = target.platform;
            tr.dataset.outcome = target.outcome;
            devices.appendChild(tr);
          }
          if (result.omittedTargets) devices.appendChild(row(["…", result.omittedTargets + " more not listed", "", "", "", ""]));
        }

        $("login-form").addEventListener("submit", async (event) => {
          event.preventDefault();
          $("login-status").textContent = "";
          try { await signIn($("login-user").value, $("login-password").value); }
          catch (error) { $("login-status").textContent = "Sign-in failed: " + error.message; }
        });
        $("signout").addEventListener("click", () => { sessionStorage.removeItem("pushgate.credentials"); location.reload(); });
        $("send-form").addEventListener("submit", send);
        $("refresh").addEventListener("click", loadRegistrations);
        $("sandbox-register-button").addEventListener("click", registerSandboxDevice);
        if (credentials) {
          api("GET", "/api/me").then(async (response) => {
            if (!response.ok) { sessionStorage.removeItem("pushgate.credentials"); credentials = null; return; }
            const [user, ...rest] = new TextDecoder().decode(Uint8Array.from(atob(credentials), (c) => c.charCodeAt(0))).split(":");
            await signIn(user, rest.join(":"));
          });
        }
        </script>
        </body>
        </html>
        """#
}

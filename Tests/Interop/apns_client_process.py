"""One short-lived APNs client process: builds its own aioapns client (so its own provider token,
issued now, on its own connection), sends one alert to a device token, prints the result as JSON.

    python apns_client_process.py <sandbox dir> <device token> <text>

Used by test_apns.py to play a restarted gateway or a second replica.
"""

import json
import sys
from pathlib import Path

from aioapns import NotificationRequest, PushType

from support import aioapns_send, load_sandbox


def main() -> None:
    sandbox = load_sandbox(Path(sys.argv[1]))
    request = NotificationRequest(
        device_token=sys.argv[2], message={"aps": {"alert": sys.argv[3]}}, push_type=PushType.ALERT
    )
    [result] = aioapns_send(sandbox, [request])
    print(json.dumps({"status": result.status, "reason": result.description, "apns_id": request.notification_id}))


if __name__ == "__main__":
    main()

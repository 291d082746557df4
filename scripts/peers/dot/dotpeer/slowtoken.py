# For the crash trials: holds each token endpoint answer for DOT_TOKEN_DELAY_MS after the server
# has rotated the refresh token (the window in which a client that dies never learns the new one),
# and appends one line per token request to DOT_TOKEN_MARKS when it arrives, so a test can kill
# the client inside that window. A line is the arrival time and the grant type (the fleet judge
# counts the refresh_token ones).
import os, time

DELAY = int(os.environ.get("DOT_TOKEN_DELAY_MS", "0")) / 1000.0
MARKS = os.environ.get("DOT_TOKEN_MARKS")


class SlowTokenMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path != "/o/token/":
            return self.get_response(request)
        if MARKS:
            with open(MARKS, "a") as marks:
                marks.write(f"{time.time():.3f} {request.POST.get('grant_type', '-')}\n")
        response = self.get_response(request)
        if DELAY:
            time.sleep(DELAY)
        return response

from django.urls import path

from transcripts import apis

app_name = "transcripts"
urlpatterns = [
    path("sessions/<extid:session_id>/events", apis.SessionEventsApi.as_view(), name="events"),
    path("sessions/<extid:session_id>/verify", apis.SessionVerifyApi.as_view(), name="verify"),
]

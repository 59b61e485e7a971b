from django.urls import path

from profiles import apis

app_name = "profiles"
urlpatterns = [
    path("users/<extid:user_id>/profile", apis.UserProfileApi.as_view(), name="profile"),
]
